// Which tensors of an op run widened and where: the rule every backend that computes 16-bit
// float tensors (REMAT_DTYPE_F16, BF16) in float32 shares. Each distinct 16-bit tensor of an op
// (distinct by region and offset) gets a float32 slice of one workspace, in order of first
// appearance, inputs then outputs; an output that is an input (an update in place) shares the
// input's slice. Ops that move bytes of any dtype (the catalogue's kAnyDtype: spill, prefetch,
// wait) never run widened, nor do the data movement ops whose tensors share one dtype
// (moves_bytes). The CPU backend widens on the host (backends/cpu/widening.h), the
// GPU backends on the device (backends/gpu/ops/widening.h); docs/backends.md states the rule.
// A 16-bit product's float32 operand also gets a slice: it is rounded to the product's type.
#ifndef REMAT_BACKENDS_SHARED_WIDENING_SLICES_H_
#define REMAT_BACKENDS_SHARED_WIDENING_SLICES_H_

#include <stdint.h>

#include "runtime/backend.h"

namespace remat {

/// Alignment and granule of the workspace's slices, in bytes.
constexpr uint64_t kWideningAlignment = 64;

/// |bytes| rounded up to kWideningAlignment: what a slice of that many bytes takes.
constexpr uint64_t aligned_slice_bytes(uint64_t bytes) {
  return (bytes + kWideningAlignment - 1) / kWideningAlignment * kWideningAlignment;
}

/// Most distinct tensors one op has: every input and output.
constexpr int kMaxWidenedTensors = kMaxOpInputs + kMaxOpOutputs;

/// The 16-bit tensors of one call and their slices of the workspace.
struct WideningSlices {
  const TensorRef* tensor[kMaxWidenedTensors];  ///< First appearance of each tensor.
  uint64_t offset[kMaxWidenedTensors];          ///< Byte offset of its slice in the workspace.
  int count = 0;                                ///< Used entries.
  uint64_t bytes = 0;                           ///< Workspace the slices take.
  /// The index of |t|'s tensor (same region and offset), or -1 when it has no slice.
  int find(const TensorRef& t) const;
};

/// Whether |x| and |y| are the same tensor: the same region and offset.
bool same_tensor(const TensorRef& x, const TensorRef& y);

/// Whether |call| moves bytes: its op moves_elements() (plan/ops.h: permute, copy, select and its
/// gradient, concat, slice) and all its tensors share one dtype. Then its kernels copy elements
/// of that dtype's size as they are, 16-bit ones too.
bool moves_bytes(const OpCall& call);

/// Whether |call| runs widened: one of its tensors is a 16-bit float, its op computes on float32
/// (not a kAnyDtype copy) and it does not moves_bytes().
bool runs_widened(const OpCall& call);

/// The 16-bit type the products (matmul, head_matmul, conv and its two gradients) of |call| take
/// their operands (inputs 0 and 1) in: the dtype of the first 16-bit one of them, else that of a
/// 16-bit first output; REMAT_DTYPE_F32 when none is 16-bit or |call| is no such product. An
/// operand not of that type (a float32 weight, a network's float32 input) is rounded to it first,
/// as PyTorch's autocast casts both operands of a linear layer or convolution
/// (docs/precision.md).
uint8_t product_operand_dtype(const OpCall& call);

/// Whether |call| is a matmul of a 16-bit product whose A and B are each of the product's type or
/// float32: what a backend that takes both operands in one 16-bit type takes (the CUDA backend:
/// Launcher::takes_half_operands; the compiler's figure mirrors it, compiler/precision.cc).
bool matmul_operands_of_one_type(const OpCall& call);

/// Whether input |i| of |call| is a product operand rounded to product_operand_dtype(): operand
/// A or B of a 16-bit product whose dtype is not the product's. It gets a slice, which holds
/// its values rounded (then widened, on backends that compute in float32).
bool rounds_operand(const OpCall& call, int i);

/// |call|'s 16-bit tensors and their slices; none when it does not run widened. The tensors
/// |as_is| marks get none, a backend's kernel reading or writing them in 16 bits as they are:
/// input i is bit i, output o bit kMaxOpInputs + o.
WideningSlices widening_slices(const OpCall& call, uint32_t as_is = 0);

/// Bytes of workspace |call| needs to run widened: over its distinct 16-bit float tensors,
/// 4 bytes an element rounded up to kWideningAlignment each, summed; 0 when it does not run
/// widened.
uint64_t widening_bytes(const OpCall& call);

/// |t| as a float32 kernel sees its slice: same region, offset and shape (the caller moves it
/// to the slice), dtype f32 and 4 bytes an element (kernels such as copy size by bytes).
TensorRef widened_ref(const TensorRef& t);

}  // namespace remat

#endif  // REMAT_BACKENDS_SHARED_WIDENING_SLICES_H_
