// CPU kernels: one function per opcode, over host pointers resolved by the CPU backend.
#ifndef REMAT_BACKENDS_CPU_KERNELS_H_
#define REMAT_BACKENDS_CPU_KERNELS_H_

#include "runtime/backend.h"
#include "runtime/port.h"

namespace remat {
namespace cpu {

/// Everything a CPU kernel needs: the op (shapes, attributes) and its tensors' host addresses.
struct KernelArgs {
  const OpCall* call;        ///< The op; shapes are verified before any op runs.
  void* in[kMaxOpInputs];    ///< Host address of each input (same order as call->inputs).
  void* out[kMaxOpOutputs];  ///< Host address of each output.
  const StepContext* ctx;    ///< Seed and step index.
  ErrorBuffer* err;          ///< Where a data-dependent failure is described.
  void* scratch;             ///< scratch_bytes(threads) of 64-byte aligned working memory.
  /// strip_bytes(threads) of 64-byte aligned memory: each thread's float32 strip for a 16-bit
  /// C or layer norm's 16-bit rows (parallel.h: product_strip); nullptr where the backend was
  /// prepared for no op that uses them (widening.h: uses_strips), whose kernels never read it.
  float* strips;
  PortTeam* team;    ///< The backend's threads; nullptr: the caller's only.
  uint32_t threads;  ///< Threads in |team| (0 or 1: the caller's only).
  /// The bfloat16 tensor behind each input run_widened() widened from bfloat16, for the kernels
  /// that read some of it as it is too (attention_reads_bf16); nullptr for the others.
  const uint16_t* bf16_in[kMaxOpInputs];
  /// Where run_widened() runs a chunk of a batch (widening_chunk_items): the batch the call's
  /// tensors are part of, and the chunk's first item in it; 0 and 0 for a whole call. Fused
  /// attention's dropout draws by the item's index in the whole batch.
  int64_t batch_whole;
  int64_t batch_first;
  /// Whether matmul adds its product into its float32 C instead of writing it: a chunk of a
  /// sum over a batch's rows after the first (widening.h: product_chunk_rows). The other kernels
  /// never see it set.
  bool accumulate;
};

/// Bytes of scratch memory the kernels need with |threads| threads: GEMM packing for each, then
/// what the Winograd convolutions' threads share: their transformed filters, or their weight
/// gradients' parts of sums (conv/winograd.h).
/// The backend obtains it once, at creation, and passes it in every KernelArgs.
size_t scratch_bytes(uint32_t threads);

/// Bytes of KernelArgs::strips with |threads| threads: a float32 strip each (parallel.h:
/// product_strip). The backend obtains them when it is first prepared for an op with a 16-bit
/// tensor, so that a float32 session holds none.
size_t strip_bytes(uint32_t threads);

/// A kernel: returns REMAT_OK, or a status with a message in args.err for bad data.
using Kernel = remat_status (*)(const KernelArgs& args);

/// The kernel of |code|, or nullptr when the CPU backend does not implement it.
Kernel kernel_for(uint16_t code);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_KERNELS_H_
