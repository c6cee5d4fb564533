// The per-instruction-set builds of ops/batchnorm_channels.h: meson compiles this file with
// REMAT_CPU_ISA set and the matching -m flags (isa/build.h), as gemm/packed.cc. Rows are
// __restrict (the catalogue promises batch norm's outputs never alias its inputs), or GCC keeps
// the output loops scalar.
#include <math.h>

#include <cmath>

#include "backends/cpu/ops/batchnorm_channels.h"
#include "backends/cpu/isa/build.h"
#include "backends/cpu/isa/lane_sum.h"

namespace remat {
namespace cpu {
namespace {

// rstd from the stored variance, the same in the forward and the backward op.
float rstd_of(float var, float eps) {
  return static_cast<float>(Accum(1) /
                            std::sqrt(static_cast<Accum>(var) + static_cast<Accum>(eps)));
}

}  // namespace

void REMAT_CPU_ENTRY(batch_norm_channel)(const ChannelRows& rows, const BatchNormChannel& ch) {
  const Accum count = static_cast<Accum>(rows.images * rows.inner);
  // Two passes in double (Accum), as layernorm: the variance of large-mean channels stays accurate.
  LaneSum sum;
  for (int64_t n = 0; n < rows.images; ++n) {
    const float* row = ch.x + n * rows.stride;
    sum.add(rows.inner, [row](int64_t i) { return static_cast<Accum>(row[i]); });
  }
  const Accum mean = sum.total() / count;
  LaneSum sq;
  for (int64_t n = 0; n < rows.images; ++n) {
    const float* row = ch.x + n * rows.stride;
    sq.add(rows.inner, [row, mean](int64_t i) {
      const Accum d = row[i] - mean;
      return d * d;
    });
  }
  const float m = static_cast<float>(mean), var = static_cast<float>(sq.total() / count);
  const float s = rstd_of(var, ch.eps);
  *ch.mean = m;
  *ch.var = var;
  for (int64_t n = 0; n < rows.images; ++n) {
    const float* __restrict row = ch.x + n * rows.stride;
    float* __restrict out = ch.y + n * rows.stride;
    for (int64_t i = 0; i < rows.inner; ++i) out[i] = (row[i] - m) * s * ch.gamma + ch.beta;
  }
}

void REMAT_CPU_ENTRY(batch_norm_grad_channel)(const ChannelRows& rows,
                                              const BatchNormGradChannel& ch) {
  const Accum count = static_cast<Accum>(rows.images * rows.inner);
  const float m = ch.mean, s = rstd_of(ch.var, ch.eps);
  LaneSum sum_dy, sum_dy_xhat;
  for (int64_t n = 0; n < rows.images; ++n) {
    const float* d = ch.dy + n * rows.stride;
    const float* row = ch.x + n * rows.stride;
    sum_dy.add(rows.inner, [d](int64_t i) { return static_cast<Accum>(d[i]); });
    sum_dy_xhat.add(rows.inner, [d, row, m, s](int64_t i) {
      return static_cast<Accum>(d[i]) * ((row[i] - m) * s);
    });
  }
  *ch.dbeta = static_cast<float>(sum_dy.total());
  *ch.dgamma = static_cast<float>(sum_dy_xhat.total());
  const float mean_dy = static_cast<float>(sum_dy.total() / count);
  const float mean_dy_xhat = static_cast<float>(sum_dy_xhat.total() / count);
  const float scale = s * ch.gamma;
  for (int64_t n = 0; n < rows.images; ++n) {
    const float* __restrict d = ch.dy + n * rows.stride;
    const float* __restrict row = ch.x + n * rows.stride;
    float* __restrict out = ch.dx + n * rows.stride;
    for (int64_t i = 0; i < rows.inner; ++i) {
      const float xhat = (row[i] - m) * s;
      out[i] = scale * (d[i] - mean_dy - xhat * mean_dy_xhat);
    }
  }
}

}  // namespace cpu
}  // namespace remat
