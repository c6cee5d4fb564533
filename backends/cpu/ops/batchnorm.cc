// Batch normalisation over the channels of [N, C, ...]: training (batch statistics), its
// gradient, evaluation (running statistics), the running statistics' update and the count of
// batches it has seen. Threads take whole channels; a channel's training loops are in
// ops/batchnorm_channels.cc, built per instruction set. The [N, C, ...] tensors (x and y, dy,
// x and dx) may be 16-bit, read and written as they are a part of a row at a time (widening.h:
// reads_16_bit_input, writes_16_bit_output).
#include <math.h>

#include "backends/cpu/ops/batchnorm_channels.h"
#include "backends/cpu/isa/isa.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/ops/half_chunks.h"
#include "backends/cpu/parallel.h"
#include "plan/op_subset.h"

namespace remat {
namespace cpu {
namespace {

// [N, C, inner] view of a batch-norm tensor (rank 2: inner 1).
struct Channels {
  int64_t n, c, inner;
  /// Offset of image |image|'s row of channel |channel|: |inner| contiguous elements.
  int64_t row(int64_t image, int64_t channel) const { return (image * c + channel) * inner; }
};

Channels channels_of(const TensorRef& t) {
  const int64_t n = t.dims[0], c = t.dims[1];
  return {n, c, n * c > 0 ? t.numel / (n * c) : 0};
}

// Input |i| of |args| from element |at| on, in its dtype.
ChannelIn channel_in(const KernelArgs& args, int i, int64_t at) {
  const TensorRef& t = in_ref(args, i);
  return {static_cast<const uint8_t*>(args.in[i]) + at * (kBuildHalfFloats ? elem_bytes(t) : 4),
          t.dtype};
}

// Output |o| of |args| from element |at| on, in its dtype.
ChannelOut channel_out(const KernelArgs& args, int o, int64_t at) {
  const TensorRef& t = out_ref(args, o);
  return {static_cast<uint8_t*>(args.out[o]) + at * (kBuildHalfFloats ? elem_bytes(t) : 4),
          t.dtype};
}

}  // namespace

void batch_norm_channel(const ChannelRows& rows, const BatchNormChannel& ch) {
  REMAT_CPU_BEST(batch_norm_channel)(rows, ch);
}

void batch_norm_grad_channel(const ChannelRows& rows, const BatchNormGradChannel& ch) {
  REMAT_CPU_BEST(batch_norm_grad_channel)(rows, ch);
}

remat_status batch_norm(const KernelArgs& args) {
  const Channels v = channels_of(in_ref(args, 0));
  const float* gamma = in_f32(args, 1);
  const float* beta = in_f32(args, 2);
  float* mean_out = out_f32(args, 1);
  float* var_out = out_f32(args, 2);
  const float eps = fattr(*args.call, attr::batch_norm::eps);
  const ChannelRows rows{v.n, v.inner, v.c * v.inner};
  parallel_for(args, v.c, 1, [&](int64_t c0, int64_t c1, uint32_t) {
    for (int64_t c = c0; c < c1; ++c) {
      batch_norm_channel(rows, {channel_in(args, 0, v.row(0, c)), gamma[c], beta[c], eps,
                                channel_out(args, 0, v.row(0, c)), mean_out + c, var_out + c});
    }
  });
  return REMAT_OK;
}

remat_status batch_norm_grad(const KernelArgs& args) {
  const Channels v = channels_of(in_ref(args, 1));
  const float* mean = in_f32(args, 2);
  const float* var = in_f32(args, 3);
  const float* gamma = in_f32(args, 4);
  float* dgamma = out_f32(args, 1);
  float* dbeta = out_f32(args, 2);
  const float eps = fattr(*args.call, attr::batch_norm_grad::eps);
  const ChannelRows rows{v.n, v.inner, v.c * v.inner};
  parallel_for(args, v.c, 1, [&](int64_t c0, int64_t c1, uint32_t) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t at = v.row(0, c);
      batch_norm_grad_channel(
          rows, {channel_in(args, 0, at), channel_in(args, 1, at), mean[c], var[c], gamma[c], eps,
                 channel_out(args, 0, at), dgamma + c, dbeta + c});
    }
  });
  return REMAT_OK;
}

remat_status batch_norm_inference(const KernelArgs& args) {
  const Channels v = channels_of(in_ref(args, 0));
  const float* gamma = in_f32(args, 1);
  const float* beta = in_f32(args, 2);
  const float* running_mean = in_f32(args, 3);
  const float* running_var = in_f32(args, 4);
  const uint8_t x_dtype = in_ref(args, 0).dtype, y_dtype = out_ref(args, 0).dtype;
  const double eps = fattr(*args.call, attr::batch_norm_inference::eps);
  parallel_for(args, v.c, 1, [&](int64_t c0, int64_t c1, uint32_t) {
    for (int64_t c = c0; c < c1; ++c) {
      const double scale = gamma[c] / sqrt(static_cast<double>(running_var[c]) + eps);
      const float a = static_cast<float>(scale);
      const float b = static_cast<float>(beta[c] - running_mean[c] * scale);
      for (int64_t n = 0; n < v.n; ++n) {
        for_half_chunks(args.in[0], x_dtype, args.out[0], y_dtype, v.row(n, c), v.inner,
                        [a, b](const float* row, float* out, int64_t, int64_t w) {
                          for (int64_t i = 0; i < w; ++i) out[i] = row[i] * a + b;
                        });
      }
    }
  });
  return REMAT_OK;
}

remat_status running_stat_update(const KernelArgs& args) {
  // In place: output 0 is input 0, read before it is written, element by element.
  float* running = static_cast<float*>(args.out[0]);
  const float* batch = in_f32(args, 1);
  const double momentum = fattr(*args.call, attr::running_stat_update::momentum);
  const double correction = fattr(*args.call, attr::running_stat_update::correction);
  const int64_t count = in_ref(args, 0).numel;
  for (int64_t i = 0; i < count; ++i) {
    running[i] =
        static_cast<float>((1.0 - momentum) * running[i] + momentum * (correction * batch[i]));
  }
  return REMAT_OK;
}

remat_status increment(const KernelArgs& args) {
  int64_t* counter = static_cast<int64_t*>(args.out[0]);  // in place: output 0 is input 0
  *counter += 1;
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
