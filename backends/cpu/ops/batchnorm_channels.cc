// The per-instruction-set builds of ops/batchnorm_channels.h: meson compiles this file with
// REMAT_CPU_ISA set and the matching -m flags (isa/build.h), as gemm/packed.cc. Rows are
// __restrict (the catalogue promises batch norm's outputs never alias its inputs), or GCC keeps
// the output loops scalar. A float32 row is one part; a 16-bit one is cut into parts of
// kChannelChunk elements, widened (or, for an output, narrowed) on the stack.
#include <math.h>

#include <cmath>

#include "backends/cpu/ops/batchnorm_channels.h"
#include "backends/cpu/isa/build.h"
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/isa/lane_sum.h"
#include "plan/op_subset.h"
#include "remat/remat.h"

namespace remat {
namespace cpu {
namespace {

// rstd from the stored variance, the same in the forward and the backward op.
float rstd_of(float var, float eps) {
  return static_cast<float>(Accum(1) /
                            std::sqrt(static_cast<Accum>(var) + static_cast<Accum>(eps)));
}

bool is_f32(uint8_t dtype) { return !kBuildHalfFloats || dtype == REMAT_DTYPE_F32; }

// Calls f(k, w) for the parts [k, k + w) of a row of |inner| elements: the whole row where
// |whole| (every tensor float32, and always in a build without 16-bit floats), else parts of
// kChannelChunk.
template <typename F>
void for_parts(int64_t inner, bool whole, const F& f) {
  if (!kBuildHalfFloats || whole) {
    f(int64_t{0}, inner);
    return;
  }
  for (int64_t k = 0; k < inner; k += kChannelChunk)
    f(k, inner - k < kChannelChunk ? inner - k : kChannelChunk);
}

// Elements [k, k + w) of row |n| of |t| as float32: in the tensor, or widened into |buf|.
const float* in_part(const ChannelRows& rows, const ChannelIn& t, int64_t n, int64_t k, int64_t w,
                     float* buf) {
  if (is_f32(t.dtype)) return static_cast<const float*>(t.data) + n * rows.stride + k;
  widen_span(t.dtype, static_cast<const uint16_t*>(t.data) + n * rows.stride + k, buf, w);
  return buf;
}

// Where elements [k, k + w) of row |n| of |t| are computed: in the tensor, or in |buf|, which
// out_done() rounds into it.
float* out_part(const ChannelRows& rows, const ChannelOut& t, int64_t n, int64_t k, float* buf) {
  return is_f32(t.dtype) ? static_cast<float*>(t.data) + n * rows.stride + k : buf;
}

void out_done(const ChannelRows& rows, const ChannelOut& t, int64_t n, int64_t k, int64_t w,
              const float* buf) {
  if (!is_f32(t.dtype))
    narrow_span(t.dtype, buf, static_cast<uint16_t*>(t.data) + n * rows.stride + k, w);
}

}  // namespace

void REMAT_CPU_ENTRY(batch_norm_channel)(const ChannelRows& rows, const BatchNormChannel& ch) {
  const Accum count = static_cast<Accum>(rows.images * rows.inner);
  const bool whole = is_f32(ch.x.dtype) && is_f32(ch.y.dtype);
  float xs[kBuildHalfFloats ? kChannelChunk : 1], ys[kBuildHalfFloats ? kChannelChunk : 1];
  // Two passes in double (Accum), as layernorm: the variance of large-mean channels stays accurate.
  LaneSum sum;
  for (int64_t n = 0; n < rows.images; ++n) {
    for_parts(rows.inner, whole, [&](int64_t k, int64_t w) {
      const float* row = in_part(rows, ch.x, n, k, w, xs);
      sum.add(w, [row](int64_t i) { return static_cast<Accum>(row[i]); });
    });
  }
  const Accum mean = sum.total() / count;
  LaneSum sq;
  for (int64_t n = 0; n < rows.images; ++n) {
    for_parts(rows.inner, whole, [&](int64_t k, int64_t w) {
      const float* row = in_part(rows, ch.x, n, k, w, xs);
      sq.add(w, [row, mean](int64_t i) {
        const Accum d = row[i] - mean;
        return d * d;
      });
    });
  }
  const float m = static_cast<float>(mean), var = static_cast<float>(sq.total() / count);
  const float s = rstd_of(var, ch.eps);
  *ch.mean = m;
  *ch.var = var;
  for (int64_t n = 0; n < rows.images; ++n) {
    for_parts(rows.inner, whole, [&](int64_t k, int64_t w) {
      const float* __restrict row = in_part(rows, ch.x, n, k, w, xs);
      float* __restrict out = out_part(rows, ch.y, n, k, ys);
      for (int64_t i = 0; i < w; ++i) out[i] = (row[i] - m) * s * ch.gamma + ch.beta;
      out_done(rows, ch.y, n, k, w, ys);
    });
  }
}

void REMAT_CPU_ENTRY(batch_norm_grad_channel)(const ChannelRows& rows,
                                              const BatchNormGradChannel& ch) {
  const Accum count = static_cast<Accum>(rows.images * rows.inner);
  const float m = ch.mean, s = rstd_of(ch.var, ch.eps);
  const bool whole = is_f32(ch.dy.dtype) && is_f32(ch.x.dtype) && is_f32(ch.dx.dtype);
  constexpr int64_t kBuf = kBuildHalfFloats ? kChannelChunk : 1;  // firmware: no 16-bit rows
  float dys[kBuf], xs[kBuf], dxs[kBuf];
  LaneSum sum_dy, sum_dy_xhat;
  for (int64_t n = 0; n < rows.images; ++n) {
    for_parts(rows.inner, whole, [&](int64_t k, int64_t w) {
      const float* d = in_part(rows, ch.dy, n, k, w, dys);
      const float* row = in_part(rows, ch.x, n, k, w, xs);
      sum_dy.add(w, [d](int64_t i) { return static_cast<Accum>(d[i]); });
      sum_dy_xhat.add(
          w, [d, row, m, s](int64_t i) { return static_cast<Accum>(d[i]) * ((row[i] - m) * s); });
    });
  }
  *ch.dbeta = static_cast<float>(sum_dy.total());
  *ch.dgamma = static_cast<float>(sum_dy_xhat.total());
  const float mean_dy = static_cast<float>(sum_dy.total() / count);
  const float mean_dy_xhat = static_cast<float>(sum_dy_xhat.total() / count);
  const float scale = s * ch.gamma;
  for (int64_t n = 0; n < rows.images; ++n) {
    for_parts(rows.inner, whole, [&](int64_t k, int64_t w) {
      const float* __restrict d = in_part(rows, ch.dy, n, k, w, dys);
      const float* __restrict row = in_part(rows, ch.x, n, k, w, xs);
      float* __restrict out = out_part(rows, ch.dx, n, k, dxs);
      for (int64_t i = 0; i < w; ++i) {
        const float xhat = (row[i] - m) * s;
        out[i] = scale * (d[i] - mean_dy - xhat * mean_dy_xhat);
      }
      out_done(rows, ch.dx, n, k, w, dxs);
    });
  }
}

}  // namespace cpu
}  // namespace remat
