// The precision a plan stores its activations in: what `--precision` asks for, and the policy
// that gives every tensor of a graph its dtype.
#ifndef REMAT_COMPILER_PRECISION_H_
#define REMAT_COMPILER_PRECISION_H_

#include <string>

#include "backends/device_profile.h"
#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// How a plan stores its activations (docs/precision.md). Parameters, optimizer state,
/// parameter gradients, the loss and per-row statistics are float32 at every precision.
enum class Precision {
  kFp32 = 0,  ///< Every float tensor float32: the default.
  kBf16 = 1,  ///< Activations, checkpoints, spill slots and their gradients in bfloat16.
  kFp16 = 2,  ///< The same tensors in IEEE binary16.
};

/// "fp32", "bf16" or "fp16".
const char* precision_name(Precision precision);

/// Parses "fp32", "bf16" or "fp16"; returns false on anything else.
bool parse_precision(const std::string& text, Precision* out);

/// The dtype of the tensors |precision| stores in 16 bits (REMAT_DTYPE_F32 for kFp32).
remat_dtype activation_dtype(Precision precision);

/// Gives the forward activations of |graph| (forward ops only, before autodiff) the dtype of
/// |precision|: the first output of every forward op, when it is a float32 activation that the
/// loss does not read. Other outputs (layer and batch norm statistics, attention's log-sum-exp,
/// a loss's probabilities), the loss's inputs (so the eval program's predictions), inputs,
/// parameters and state keep their dtypes. Autodiff then gives each gradient its tensor's dtype.
void apply_precision(Graph& graph, Precision precision);

/// The bytes a backend allocates beside the arena to run |graph|'s 16-bit tensors in float32
/// (docs/precision.md): the most, over the ops that compute (not spill, prefetch or wait), of 4
/// bytes an element of each distinct 16-bit tensor the op reads or writes, each rounded up to 64
/// bytes (backends/shared/widening_slices.h: widening_bytes), as the backend's |rule|
/// (DeviceProfile::widening) counts them. kWhole: every op its whole tensors. kGpu
/// (backends/gpu/ops/widening.h): the same, but the ops of plan/ops.h's gpu_reads_16_bit count
/// nothing. kCpu (backends/cpu/widening.h, cpu_widening_bytes): the ops widened a chunk at a time
/// on the stack (the elementwise ops: plan/ops.h computes_per_element) count nothing, fused
/// attention (computes_per_batch_item) counts its rank-3 tensors for widening_chunk_items() of
/// its batch, the matrix products only a 16-bit copy of an operand of another dtype, and
/// reduce_leading's input, bias_add's x and y and layer norm's rows (where kNormRowSlots of them
/// fit kWideningStripFloats) nothing. 0 for a plan without 16-bit tensors.
uint64_t widening_bytes(const Graph& graph, WideningRule rule);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_PRECISION_H_
