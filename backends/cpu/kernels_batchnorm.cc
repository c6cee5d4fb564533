// Batch normalisation over the channels of [N, C, ...]: training (batch statistics), its
// gradient, evaluation (running statistics), the running statistics' update and the count of
// batches it has seen. Threads take whole channels.
#include <math.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"

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

// A sum in double over kLanes interleaved accumulators (element i of a row goes to lane
// i % kLanes), combined pairwise at the end: a fixed order, so the same bits on any thread
// count, and independent chains the compiler vectorizes (one serial chain of double adds
// cost a ResNet-20 step a tenth of its time).
constexpr int64_t kLanes = 8;
struct LaneSum {
  double lane[kLanes] = {};
  /// Adds f(i) for i in [0, count) into lanes i % kLanes.
  template <typename F>
  void add(int64_t count, const F& f) {
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lane[l] += f(i + l);
    }
    for (int64_t l = 0; i + l < count; ++l) lane[l] += f(i + l);
  }
  double total() const {
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
};

// rstd from the stored variance, the same in the forward and the backward op.
float rstd_of(float var, float eps) {
  return static_cast<float>(1.0 / sqrt(static_cast<double>(var) + static_cast<double>(eps)));
}

}  // namespace

remat_status batch_norm(const KernelArgs& args) {
  const Channels v = channels_of(in_ref(args, 0));
  const float* x = in_f32(args, 0);
  const float* gamma = in_f32(args, 1);
  const float* beta = in_f32(args, 2);
  float* y = out_f32(args, 0);
  float* mean_out = out_f32(args, 1);
  float* var_out = out_f32(args, 2);
  const float eps = fattr(*args.call, 0, 1e-5f);
  const double count = static_cast<double>(v.n * v.inner);
  parallel_for(args, v.c, 1, [&](int64_t c0, int64_t c1, uint32_t) {
    for (int64_t c = c0; c < c1; ++c) {
      // Two passes in double, as layernorm: the variance of large-mean channels stays accurate.
      LaneSum sum;
      for (int64_t n = 0; n < v.n; ++n) {
        const float* row = x + v.row(n, c);
        sum.add(v.inner, [row](int64_t i) { return static_cast<double>(row[i]); });
      }
      const double mean = sum.total() / count;
      LaneSum sq;
      for (int64_t n = 0; n < v.n; ++n) {
        const float* row = x + v.row(n, c);
        sq.add(v.inner, [row, mean](int64_t i) {
          const double d = row[i] - mean;
          return d * d;
        });
      }
      const float m = static_cast<float>(mean), var = static_cast<float>(sq.total() / count);
      const float s = rstd_of(var, eps);
      mean_out[c] = m;
      var_out[c] = var;
      for (int64_t n = 0; n < v.n; ++n) {
        const float* row = x + v.row(n, c);
        float* out = y + v.row(n, c);
        for (int64_t i = 0; i < v.inner; ++i) out[i] = (row[i] - m) * s * gamma[c] + beta[c];
      }
    }
  });
  return REMAT_OK;
}

remat_status batch_norm_grad(const KernelArgs& args) {
  const Channels v = channels_of(in_ref(args, 1));
  const float* dy = in_f32(args, 0);
  const float* x = in_f32(args, 1);
  const float* mean = in_f32(args, 2);
  const float* var = in_f32(args, 3);
  const float* gamma = in_f32(args, 4);
  float* dx = out_f32(args, 0);
  float* dgamma = out_f32(args, 1);
  float* dbeta = out_f32(args, 2);
  const float eps = fattr(*args.call, 0, 1e-5f);
  const double count = static_cast<double>(v.n * v.inner);
  parallel_for(args, v.c, 1, [&](int64_t c0, int64_t c1, uint32_t) {
    for (int64_t c = c0; c < c1; ++c) {
      const float m = mean[c], s = rstd_of(var[c], eps);
      LaneSum sum_dy, sum_dy_xhat;
      for (int64_t n = 0; n < v.n; ++n) {
        const float* d = dy + v.row(n, c);
        const float* row = x + v.row(n, c);
        sum_dy.add(v.inner, [d](int64_t i) { return static_cast<double>(d[i]); });
        sum_dy_xhat.add(v.inner, [d, row, m, s](int64_t i) { return static_cast<double>(d[i]) * ((row[i] - m) * s); });
      }
      dbeta[c] = static_cast<float>(sum_dy.total());
      dgamma[c] = static_cast<float>(sum_dy_xhat.total());
      // dx = rstd * gamma * (dy - mean(dy) - xhat * mean(dy * xhat)).
      const float mean_dy = static_cast<float>(sum_dy.total() / count);
      const float mean_dy_xhat = static_cast<float>(sum_dy_xhat.total() / count);
      const float scale = s * gamma[c];
      for (int64_t n = 0; n < v.n; ++n) {
        const float* d = dy + v.row(n, c);
        const float* row = x + v.row(n, c);
        float* out = dx + v.row(n, c);
        for (int64_t i = 0; i < v.inner; ++i) {
          const float xhat = (row[i] - m) * s;
          out[i] = scale * (d[i] - mean_dy - xhat * mean_dy_xhat);
        }
      }
    }
  });
  return REMAT_OK;
}

remat_status batch_norm_inference(const KernelArgs& args) {
  const Channels v = channels_of(in_ref(args, 0));
  const float* x = in_f32(args, 0);
  const float* gamma = in_f32(args, 1);
  const float* beta = in_f32(args, 2);
  const float* running_mean = in_f32(args, 3);
  const float* running_var = in_f32(args, 4);
  float* y = out_f32(args, 0);
  const double eps = fattr(*args.call, 0, 1e-5f);
  parallel_for(args, v.c, 1, [&](int64_t c0, int64_t c1, uint32_t) {
    for (int64_t c = c0; c < c1; ++c) {
      const double scale = gamma[c] / sqrt(static_cast<double>(running_var[c]) + eps);
      const float a = static_cast<float>(scale);
      const float b = static_cast<float>(beta[c] - running_mean[c] * scale);
      for (int64_t n = 0; n < v.n; ++n) {
        const float* row = x + v.row(n, c);
        float* out = y + v.row(n, c);
        for (int64_t i = 0; i < v.inner; ++i) out[i] = row[i] * a + b;
      }
    }
  });
  return REMAT_OK;
}

remat_status running_stat_update(const KernelArgs& args) {
  // In place: output 0 is input 0, read before it is written, element by element.
  float* running = static_cast<float*>(args.out[0]);
  const float* batch = in_f32(args, 1);
  const double momentum = fattr(*args.call, 0, 0.1f);
  const double correction = fattr(*args.call, 1, 1.0f);
  const int64_t count = in_ref(args, 0).numel;
  for (int64_t i = 0; i < count; ++i) {
    running[i] = static_cast<float>((1.0 - momentum) * running[i] + momentum * (correction * batch[i]));
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
