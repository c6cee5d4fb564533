// How the GPU backends' shared op code (ops/ops.h) reaches one backend: a kernel's argument
// list and launch, and the few steps that are not kernels of backends/gpu/kernels.
//
// OpenCL implements it with clSetKernelArg / clEnqueueNDRangeKernel on its compute queue,
// CUDA with an argument array for cudaLaunchKernel on its compute stream. Everything an op
// decides (which kernels, which arguments in which order, how many work items) is written
// once, in backends/gpu/ops/*.cc, against this interface.
#ifndef REMAT_BACKENDS_GPU_LAUNCHER_H_
#define REMAT_BACKENDS_GPU_LAUNCHER_H_

#include <stddef.h>
#include <stdint.h>

#include "backends/gpu/abi.h"
#include "backends/gpu/host_staging.h"
#include "runtime/backend.h"

namespace remat {
namespace gpu {

/// The region of a TensorRef in the GPU backends' widening workspace (ops/widening.h): one past
/// the plan's regions (plan/region.h), so never a plan's. Every Launcher method that takes a
/// tensor resolves it to the backend's workspace buffer, as it resolves the arena.
constexpr Region kWorkspaceRegion = static_cast<Region>(kRegionCount);

/// One operand of Launcher::gemm: float32 row-major matrices at |offset| bytes into |region|,
/// rows |ld| floats apart, batch entries |stride| floats apart.
struct GemmOperand {
  Region region;
  uint64_t offset;
  int64_t ld;
  int64_t stride;
};

/// A strided batch of |batch| row-major products C = alpha * op(A) op(B) (C is M x N, the sum
/// over K; op transposes where |trans_a| / |trans_b|), every C written (beta 0), or added to
/// where |accumulate| (beta 1).
struct GemmBatch {
  bool trans_a, trans_b;
  int64_t m, n, k, batch;
  float alpha;
  GemmOperand a, b, c;
  bool accumulate;
};

/// One GPU backend's queue as the shared op code sees it. Calls enqueue work and return
/// without waiting, except where a method says otherwise. |call| names the op in messages;
/// it is null for launches that belong to no op (set_step).
class Launcher {
 public:
  /// Starts the argument list of kernel |id|; the arguments follow in the kernel's order.
  virtual void begin(KernelId id) = 0;
  /// Adds a by-value argument: |bytes| (4 or 8) bytes at |value|.
  virtual void scalar(const void* value, size_t bytes) = 0;
  /// Adds tensor |t| as the (buffer or base address, byte offset) pair of a buf_t argument.
  virtual void tensor(const TensorRef& t) = 0;
  /// Adds the device state (a GpuState pointer).
  virtual void state() = 0;
  /// Adds a LOCAL_PARAM of |bytes| bytes of work-group memory.
  virtual void local(size_t bytes) = 0;
  /// Launches the kernel begun last over |items| work items (rounded up to whole groups).
  virtual remat_status launch(size_t items, const OpCall* call, ErrorBuffer* err) = 0;
  /// Launches the kernel begun last as one work-group of group_size() work items.
  virtual remat_status launch_one_group(const OpCall* call, ErrorBuffer* err) = 0;
  /// The work-group size of kernel |id|: a power of two.
  virtual size_t group_size(KernelId id) const = 0;

  /// Fills tensor |t| with zero bytes.
  virtual remat_status zero(const TensorRef& t, const OpCall& call, ErrorBuffer* err) = 0;
  /// Copies min(src.bytes, dst.bytes) bytes of device tensor |src| to device tensor |dst|.
  virtual remat_status copy(const TensorRef& src, const TensorRef& dst, const OpCall& call,
                            ErrorBuffer* err) = 0;
  /// Before the kernels of an op that may report bad data (an id or label out of range):
  /// OpenCL clears the report, CUDA keeps the step's first report until sync().
  virtual remat_status begin_check(const OpCall& call, ErrorBuffer* err) = 0;
  /// After the kernels of an op that may report bad data (and report_value): OpenCL reads the
  /// report now (blocking) and returns the error, so the step stops at the op as on the CPU;
  /// CUDA, whose step may be a replayed graph, leaves it on the device until sync().
  virtual remat_status end_check(const OpCall& call, ErrorBuffer* err) = 0;

  /// kMatMul on the backend's BLAS (CLBlast, cuBLAS). |accumulate|: C += the product (the
  /// batch chunks after the first of a reduce-mode sum: ops/widening.h); else C is written.
  virtual remat_status matmul(const OpCall& call, bool accumulate, ErrorBuffer* err) = 0;
  /// Whether the backend's matmul() takes |call| (a 16-bit product: widening_slices.h) with its
  /// operands A and B in 16 bits, product_operand_dtype(call), and C in float32 (cuBLAS's
  /// GemmEx); otherwise they are widened to float32 first (ops/widening.h).
  virtual bool takes_half_operands(const OpCall& call) const = 0;
  /// kHeadMatMul on the backend's BLAS: one GEMM per product, or strided batches of them.
  virtual remat_status head_matmul(const OpCall& call, ErrorBuffer* err) = 0;
  /// |g| on the backend's BLAS (cuBLAS strided batched, CLBlast per entry), with the plan's
  /// matmul precision; |call| names the op in errors. M, N, K and the batch are at least 1.
  virtual remat_status gemm(const GemmBatch& g, const OpCall& call, ErrorBuffer* err) = 0;
  /// Bytes of the workspace (kWorkspaceRegion) that Backend::prepare allocated: at least
  /// workspace_bytes() (ops/ops.h) of every op of the plan.
  virtual uint64_t workspace_size() const = 0;
  /// kSpill, kPrefetch and kWait on the backend's copy queue or stream.
  virtual remat_status spill(const OpCall& call, ErrorBuffer* err) = 0;
  virtual remat_status prefetch(const OpCall& call, ErrorBuffer* err) = 0;
  virtual remat_status wait(const OpCall& call, ErrorBuffer* err) = 0;

  /// The host slots of the plan's all-reduce buckets, laid out when the backend prepared the
  /// plan (ops/allreduce.cc).
  virtual const HostStaging& host_staging() const = 0;
  /// Enqueues a copy of float32 tensor |t| (numel floats) to |host|, after every op enqueued
  /// before it; the bytes are there once finish_host_copies() returns.
  virtual remat_status read_to_host(const TensorRef& t, void* host, const OpCall& call,
                                    ErrorBuffer* err) = 0;
  /// Enqueues a copy of numel floats at |host| into tensor |t|, before any op enqueued later;
  /// |host| must keep its bytes until a later read_to_host() of the queue has finished (the
  /// queue is in order, so that copy is done by then).
  virtual remat_status write_from_host(const TensorRef& t, const void* host, const OpCall& call,
                                       ErrorBuffer* err) = 0;
  /// Returns once every copy enqueued by read_to_host() and write_from_host() is done, and every
  /// op enqueued before (so a communicator of device memory may read the tensors).
  virtual remat_status finish_host_copies(const OpCall& call, ErrorBuffer* err) = 0;
  /// Whether the backend's tensors are in CUDA device memory, where a communicator of
  /// REMAT_MEMORY_CUDA (NCCL's) sums them (CUDA: true; OpenCL: false).
  virtual bool tensors_in_cuda_memory() const = 0;
  /// Float32 tensor |t|'s address in CUDA device memory where tensors_in_cuda_memory() is true.
  virtual float* cuda_address(const TensorRef& t) const = 0;

 protected:
  ~Launcher() = default;
};

/// The team size of row kernel |id| over rows of |n| elements (kernels/common.cl): the largest
/// power of two at most n / 4 (1 below n = 8), so that each lane reads four to eight elements,
/// and at most the kernel's group size.
inline uint32_t row_team(const Launcher& l, KernelId id, int64_t n) {
  const size_t group = l.group_size(id);
  size_t team = 1;
  while (team < group && team * 8 <= static_cast<size_t>(n)) team *= 2;
  return static_cast<uint32_t>(team);
}

/// Builds one kernel's argument list on a Launcher, in the kernel's parameter order, with the
/// C++ types that match the kernel's (ulong, float, int, uint).
class Args {
 public:
  Args(Launcher& l, KernelId id) : l_(l), id_(id) { l_.begin(id); }
  Args& tensor(const TensorRef& t) {
    l_.tensor(t);
    return *this;
  }
  /// Adds tensor |t| as a typed tensor argument: the buf_t pair, then its GpuElement (an int),
  /// which the kernel loads and stores its elements by (kernels/half.cl: load_element).
  Args& typed(const TensorRef& t) {
    l_.tensor(t);
    return i32(t.dtype == REMAT_DTYPE_F16    ? kGpuElementF16
               : t.dtype == REMAT_DTYPE_BF16 ? kGpuElementBf16
                                             : kGpuElementF32);
  }
  Args& u64(uint64_t v) { return raw(&v, sizeof(v)); }
  Args& u64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
  Args& f32(float v) { return raw(&v, sizeof(v)); }
  Args& i32(int32_t v) { return raw(&v, sizeof(v)); }
  Args& u32(uint32_t v) { return raw(&v, sizeof(v)); }
  Args& state() {
    l_.state();
    return *this;
  }
  /// Work-group memory of one acc_t (double) per work item of the kernel's group.
  Args& partials() {
    l_.local(l_.group_size(id_) * sizeof(double));
    return *this;
  }
  /// Work-group memory of one float per work item of the kernel's group: the scratch of the
  /// team reductions (kernels/common.cl).
  Args& scratch() {
    l_.local(l_.group_size(id_) * sizeof(float));
    return *this;
  }
  /// The op's (index, code): where a kernel's report of bad data says it came from.
  Args& op(const OpCall& call) { return u32(call.index).u32(call.code); }
  remat_status launch(size_t items, const OpCall& call, ErrorBuffer* err) {
    return l_.launch(items, &call, err);
  }
  /// Launches a row kernel over |rows| rows, a team of |team| work items each (row_team).
  remat_status launch_rows(int64_t rows, uint32_t team, const OpCall& call, ErrorBuffer* err) {
    const size_t group = l_.group_size(id_);
    const size_t per_group = group / team;
    const size_t groups = (static_cast<size_t>(rows) + per_group - 1) / per_group;
    return l_.launch(groups * group, &call, err);
  }
  /// Launches a column kernel over |columns| columns in tiles (kernels/common.cl:
  /// REMAT_GPU_TILE_WIDTH columns a group, or the group size where that is smaller).
  remat_status launch_column_tiles(int64_t columns, const OpCall& call, ErrorBuffer* err) {
    return launch_column_tiles(columns, 1, call, err);
  }
  /// Launches a blocked column kernel: the tiles of |columns| columns once for each of |blocks|
  /// blocks of rows (the groups run over (block, tile) pairs, block-major).
  remat_status launch_column_tiles(int64_t columns, int64_t blocks, const OpCall& call,
                                   ErrorBuffer* err) {
    const size_t group = l_.group_size(id_);
    const size_t width = group < REMAT_GPU_TILE_WIDTH ? group : REMAT_GPU_TILE_WIDTH;
    const size_t groups = (static_cast<size_t>(columns) + width - 1) / width;
    return l_.launch(groups * static_cast<size_t>(blocks) * group, &call, err);
  }
  remat_status launch_one_group(const OpCall& call, ErrorBuffer* err) {
    return l_.launch_one_group(&call, err);
  }

 private:
  Args& raw(const void* value, size_t bytes) {
    l_.scalar(value, bytes);
    return *this;
  }
  Launcher& l_;
  KernelId id_;
};

}  // namespace gpu
}  // namespace remat

#endif  // REMAT_BACKENDS_GPU_LAUNCHER_H_
