// One channel of batch normalisation in training, forward and backward: the loops that sum in
// double (Accum, isa/lane_sum.h), compiled once per instruction set (ops/batchnorm_channels.cc;
// isa/isa.h) because SSE2 converts and adds two doubles at a time where AVX-512 does eight.
// ops/batchnorm.cc cuts the channels over the threads and calls the build the CPU runs best.
#ifndef REMAT_BACKENDS_CPU_OPS_BATCHNORM_CHANNELS_H_
#define REMAT_BACKENDS_CPU_OPS_BATCHNORM_CHANNELS_H_

#include <stdint.h>

namespace remat {
namespace cpu {

/// One channel of a [N, C, inner] tensor: |images| rows of |inner| contiguous elements,
/// |stride| elements apart (C * inner), from the pointers given with it.
struct ChannelRows {
  int64_t images, inner, stride;
};

/// Batch statistics and output of one channel: mean and biased variance of x (two passes in
/// double), y = (x - mean) * rstd * gamma + beta with rstd = 1 / sqrt(var + eps).
struct BatchNormChannel {
  const float* x;
  float gamma, beta, eps;
  float* y;
  float* mean;
  float* var;
};

/// Gradient of one channel from the forward's stored mean and variance: dbeta = sum dy,
/// dgamma = sum dy * xhat, dx = rstd * gamma * (dy - mean(dy) - xhat * mean(dy * xhat)).
struct BatchNormGradChannel {
  const float* dy;
  const float* x;
  float mean, var, gamma, eps;
  float* dx;
  float* dgamma;
  float* dbeta;
};

/// The forward of one channel; the same bits from every call on one CPU.
void batch_norm_channel(const ChannelRows& rows, const BatchNormChannel& ch);
/// The backward of one channel.
void batch_norm_grad_channel(const ChannelRows& rows, const BatchNormGradChannel& ch);

/// The builds for one instruction set; call only when the CPU has it.
void batch_norm_channel_baseline(const ChannelRows& rows, const BatchNormChannel& ch);
void batch_norm_channel_avx2(const ChannelRows& rows, const BatchNormChannel& ch);
void batch_norm_channel_avx512(const ChannelRows& rows, const BatchNormChannel& ch);
void batch_norm_grad_channel_baseline(const ChannelRows& rows, const BatchNormGradChannel& ch);
void batch_norm_grad_channel_avx2(const ChannelRows& rows, const BatchNormGradChannel& ch);
void batch_norm_grad_channel_avx512(const ChannelRows& rows, const BatchNormGradChannel& ch);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_OPS_BATCHNORM_CHANNELS_H_
