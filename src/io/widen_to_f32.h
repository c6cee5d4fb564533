// 16-bit float tensors of a safetensors file read as float32: what --load-params and --data do
// with a BF16 or F16 tensor where the plan binds an F32 one (docs/precision.md).
#ifndef REMAT_IO_WIDEN_TO_F32_H_
#define REMAT_IO_WIDEN_TO_F32_H_

#include "io/safetensors.h"

namespace remat {

/// Whether |dtype| (a safetensors spelling) is "BF16" or "F16": a dtype widen_to_f32 takes.
bool widens_to_f32(const std::string& dtype);

/// Rewrites |t|, a "BF16" or "F16" tensor, as the "F32" tensor of the same values (exact: every
/// 16-bit value is a float32); any other dtype is left as it is. Returns whether |t| changed.
bool widen_to_f32(SafeTensor* t);

}  // namespace remat

#endif  // REMAT_IO_WIDEN_TO_F32_H_
