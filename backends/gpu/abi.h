// What the GPU backends' host code and the shared kernels (backends/gpu/kernels) agree on: the
// kernels and their names, the device state buffer's layout and the op selectors of the
// elementwise kernels. Compiled as C++ on the host, as OpenCL C (embedded in the program after
// the dialect) and as CUDA C++; in OpenCL C without namespaces.
#ifndef REMAT_BACKENDS_GPU_ABI_H_
#define REMAT_BACKENDS_GPU_ABI_H_

#if defined(__OPENCL_C_VERSION__)
#define REMAT_GPU_I32 int
#define REMAT_GPU_U32 uint
#define REMAT_GPU_I64 long
#define REMAT_GPU_U64 ulong
#else
#include <stddef.h>
#include <stdint.h>
#define REMAT_GPU_I32 int32_t
#define REMAT_GPU_U32 uint32_t
#define REMAT_GPU_I64 int64_t
#define REMAT_GPU_U64 uint64_t
#endif

// Every kernel of backends/gpu/kernels, in one list: the OpenCL backend creates them by these
// names, the CUDA backend takes their addresses (backends/cuda/gpu_kernels.cu).
#define REMAT_GPU_KERNELS(X) \
  X(set_step)                \
  X(report_value)            \
  X(unary_op)                \
  X(binary_op)               \
  X(bias_add)                \
  X(dropout)                 \
  X(softmax)                 \
  X(softmax_grad)            \
  X(layernorm)               \
  X(layernorm_grad_dx)       \
  X(layernorm_grad_params)   \
  X(column_blocks_sum)       \
  X(column_block_partials)   \
  X(cross_entropy)           \
  X(cross_entropy_grad)      \
  X(mse)                     \
  X(embedding)               \
  X(embedding_grad)          \
  X(permute)                 \
  X(copy_rows)               \
  X(finite_check)            \
  X(sgd_update)              \
  X(adam_update)             \
  X(conv)                    \
  X(conv_grad_input)         \
  X(conv_grad_weight)        \
  X(channel_sum)             \
  X(conv_columns)            \
  X(conv_columns_grad)       \
  X(conv_grad_rows)          \
  X(conv_bias)               \
  X(max_pool)                \
  X(max_pool_grad)           \
  X(avg_pool)                \
  X(avg_pool_grad)           \
  X(global_avg_pool)         \
  X(global_avg_pool_grad)    \
  X(batch_norm_stats)        \
  X(batch_norm_apply)        \
  X(batch_norm_grad_params)  \
  X(batch_norm_grad_dx)      \
  X(batch_norm_inference)    \
  X(running_stat_update)     \
  X(increment)               \
  X(pad)                     \
  X(pad_grad)                \
  X(fill)                    \
  X(log_softmax)             \
  X(log_softmax_grad)        \
  X(reduce_sum)              \
  X(reduce_sum_rows)         \
  X(broadcast)               \
  X(init_draw)               \
  X(attention_probs)         \
  X(attention_grad_probs)    \
  X(widen_half)              \
  X(narrow_half)             \
  X(round_half)

// The largest work-group the GPU backends launch (CUDA: every launch's block; OpenCL: capped
// lower where a kernel or device allows less): a power of two, which the group sums need.
#define REMAT_GPU_GROUP_SIZE 256

// Columns a column kernel's group takes (kernels/common.cl: column tiles), or the group size
// where that is smaller.
#define REMAT_GPU_TILE_WIDTH 32

#if defined(__cplusplus)
namespace remat {
namespace gpu {
#endif

/// Device memory every kernel that needs it reads through a pointer: the step's values and the
/// report of bad data. Per-step values live here, not in launch arguments, because a captured
/// CUDA graph replays the arguments of the step it captured; set_step writes them before a step.
typedef struct GpuState {
  REMAT_GPU_U64 seed;  ///< StepContext::seed of the running step.
  REMAT_GPU_U64 step;  ///< StepContext::step of the running step.
  // The report of bad data (an id or label out of range); kCleanReport when none.
  REMAT_GPU_I32 error;           ///< 0, or 1 + OpCall::index of the first op that found some.
  REMAT_GPU_I32 error_position;  ///< Smallest bad position that op found (atomic minimum).
  REMAT_GPU_I32 error_value;     ///< The value at that position (report_value).
  REMAT_GPU_U32 error_code;      ///< That op's OpCode.
  REMAT_GPU_I64 error_limit;     ///< The range the value had to be in: [0, limit).
} GpuState;

// The selectors of unary_op and binary_op (kernels/elementwise.cl), each in one list: the host
// enums below and the kernels' switches both come from them, and each selector's formula is
// REMAT_GPU_UNARY_<name> or REMAT_GPU_BINARY_<name> in the kernel file, so a selector without a
// formula does not compile (OpenCL C at session creation, CUDA at build time).
#define REMAT_GPU_UNARY_OPS(X) \
  X(Relu)                      \
  X(Gelu)                      \
  X(Tanh)                      \
  X(Sigmoid)                   \
  X(Scale)                     \
  X(Pow)                       \
  X(Sqrt)                      \
  X(LeakyRelu)                 \
  X(Erf)                       \
  X(Clip)                      \
  X(HardSigmoid)               \
  X(Divide)
#define REMAT_GPU_BINARY_OPS(X) \
  X(Add)                        \
  X(Mul)                        \
  X(ReluGrad)                   \
  X(GeluGrad)                   \
  X(TanhGrad)                   \
  X(SigmoidGrad)                \
  X(MseGrad)                    \
  X(PowGrad)                    \
  X(SqrtGrad)                   \
  X(LeakyReluGrad)              \
  X(ErfGrad)                    \
  X(ClipGrad)                   \
  X(HardSigmoidGrad)

/// The element type of a typed tensor argument (a buf_t, its offset and this int), which the
/// kernels of the ops that read 16-bit tensors as they are (plan/ops.h: gpu_reads_16_bit) load
/// and store through (kernels/half.cl: load_element, store_element).
enum GpuElement { kGpuElementF32, kGpuElementF16, kGpuElementBf16 };

/// The |kind| argument of init_draw (kernels/elementwise.cl): InitDraw::Kind's values
/// (runtime/backend.h), which backends/gpu/ops/dispatch.cc checks.
enum GpuInit { kGpuInitZeros, kGpuInitOnes, kGpuInitUniform };

#define REMAT_GPU_SELECTOR_ENUM(name) kGpu##name,
/// The |op| argument of unary_op: kGpu<name>, numbered in list order from 0.
enum GpuUnary { REMAT_GPU_UNARY_OPS(REMAT_GPU_SELECTOR_ENUM) kGpuUnaryCount };

/// The |op| argument of binary_op: kGpu<name>, numbered in list order from 0.
enum GpuBinary { REMAT_GPU_BINARY_OPS(REMAT_GPU_SELECTOR_ENUM) kGpuBinaryCount };
#undef REMAT_GPU_SELECTOR_ENUM

#if defined(__cplusplus)
/// The kernels, indexed as REMAT_GPU_KERNELS lists them.
enum KernelId {
#define REMAT_GPU_KERNEL_ID(name) kKernel_##name,
  REMAT_GPU_KERNELS(REMAT_GPU_KERNEL_ID)
#undef REMAT_GPU_KERNEL_ID
      kKernelCount
};

/// Byte offset of the report in GpuState: the backends clear [offset, sizeof) alone, so that
/// the step's values stay.
constexpr unsigned kReportOffset = 16;
static_assert(sizeof(GpuState) == 40 && offsetof(GpuState, error) == kReportOffset,
              "GpuState must have the same layout in OpenCL C, CUDA and host C++");

/// The report of a state with no bad data: error 0, no position yet.
constexpr GpuState kCleanReport = {0, 0, 0, 0x7fffffff, 0, 0, 0};
}  // namespace gpu
}  // namespace remat
#endif

#endif  // REMAT_BACKENDS_GPU_ABI_H_
