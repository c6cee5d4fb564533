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

/// A tensor's rows of one channel, from its first element: float32, or a 16-bit tensor read as
/// it is (|dtype| REMAT_DTYPE_BF16 or F16: widened kChannelChunk elements of a row at a time on
/// the stack, the bits of the widened copy; widening.h's reads_16_bit_input).
struct ChannelIn {
  const void* data;
  uint8_t dtype;
};

/// An output's rows of one channel: float32, or 16-bit, each element rounded once from the
/// float32 value (writes_16_bit_output).
struct ChannelOut {
  void* data;
  uint8_t dtype;
};

/// Elements of a 16-bit row the channel loops widen or narrow at a time: a multiple of
/// LaneSum's lanes (isa/lane_sum.h), so that each element goes to the lane it takes in a
/// float32 row and the sums keep their bits.
constexpr int64_t kChannelChunk = 1024;

/// Batch statistics and output of one channel: mean and biased variance of x (two passes in
/// double), y = (x - mean) * rstd * gamma + beta with rstd = 1 / sqrt(var + eps).
struct BatchNormChannel {
  ChannelIn x;
  float gamma, beta, eps;
  ChannelOut y;
  float* mean;
  float* var;
};

/// Gradient of one channel from the forward's stored mean and variance: dbeta = sum dy,
/// dgamma = sum dy * xhat, dx = rstd * gamma * (dy - mean(dy) - xhat * mean(dy * xhat)).
struct BatchNormGradChannel {
  ChannelIn dy;
  ChannelIn x;
  float mean, var, gamma, eps;
  ChannelOut dx;
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
