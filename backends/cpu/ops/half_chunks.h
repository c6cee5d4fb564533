// A pass over a span of a kernel's input and output, each float32 or 16-bit, for the CPU kernels
// that read and write 16-bit tensors as they are (../widening.h: reads_16_bit_input,
// writes_16_bit_output): the float32 span itself, or chunks widened and narrowed on the thread's
// stack, with the bits of the widened copies.
#ifndef REMAT_BACKENDS_CPU_OPS_HALF_CHUNKS_H_
#define REMAT_BACKENDS_CPU_OPS_HALF_CHUNKS_H_

#include <stdint.h>

#include "backends/cpu/isa/half_span.h"
#include "plan/half_float.h"
#include "plan/op_subset.h"

namespace remat {
namespace cpu {

/// Elements for_half_chunks() widens and narrows at a time: 8 KB of stack for both.
constexpr int64_t kHalfChunk = 1024;

/// Calls f(x, y, k, w) for elements [k, k + w) of the |n| elements from element |at| of input
/// |in| (dtype |in_dtype|) and output |out| (|out_dtype|), x and y float32 pointers to element k:
/// once over the whole span where both are float32 (always in a build without 16-bit floats),
/// else kHalfChunk elements at a time, a 16-bit input widened before f and a 16-bit output
/// rounded once after it.
template <typename F>
void for_half_chunks(const void* in, uint8_t in_dtype, void* out, uint8_t out_dtype, int64_t at,
                     int64_t n, const F& f) {
  const bool in_half = kBuildHalfFloats && is_half_float(in_dtype);
  const bool out_half = kBuildHalfFloats && is_half_float(out_dtype);
  if (!in_half && !out_half) {
    f(static_cast<const float*>(in) + at, static_cast<float*>(out) + at, int64_t{0}, n);
    return;
  }
  constexpr int64_t kBuf = kBuildHalfFloats ? kHalfChunk : 1;  // firmware: no 16-bit tensors
  float xs[kBuf], ys[kBuf];
  for (int64_t k = 0; k < n; k += kHalfChunk) {
    const int64_t w = n - k < kHalfChunk ? n - k : kHalfChunk;
    if (in_half) widen_span(in_dtype, static_cast<const uint16_t*>(in) + at + k, xs, w);
    f(in_half ? xs : static_cast<const float*>(in) + at + k,
      out_half ? ys : static_cast<float*>(out) + at + k, k, w);
    if (out_half) narrow_span(out_dtype, ys, static_cast<uint16_t*>(out) + at + k, w);
  }
}

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_OPS_HALF_CHUNKS_H_
