// Elementwise kernels: bias, add, mul, scale, powers, activations with their gradients, dropout,
// fill.
#include <math.h>

#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/isa/math_span.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/ops/half_chunks.h"
#include "backends/cpu/parallel.h"
#include "plan/half_float.h"
#include "plan/op_subset.h"
#include "plan/philox.h"

namespace remat {
namespace cpu {
namespace {

// Elements below which an elementwise kernel stays on one thread (and the size of a part:
// a multiple of 4, so dropout's Philox groups of four never straddle two parts).
constexpr int64_t kElementGrain = 1 << 14;

template <typename F>
remat_status unary(const KernelArgs& args, F f) {
  const float* __restrict x = in_f32(args, 0);
  float* __restrict y = out_f32(args, 0);
  parallel_for(args, out_ref(args, 0).numel, kElementGrain,
               [&](int64_t begin, int64_t end, uint32_t) {
                 for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
               });
  return REMAT_OK;
}

template <typename F>
remat_status binary(const KernelArgs& args, F f) {
  const float* __restrict a = in_f32(args, 0);
  const float* __restrict b = in_f32(args, 1);
  float* __restrict c = out_f32(args, 0);
  parallel_for(args, out_ref(args, 0).numel, kElementGrain,
               [&](int64_t begin, int64_t end, uint32_t) {
                 for (int64_t i = begin; i < end; ++i) c[i] = f(a[i], b[i]);
               });
  return REMAT_OK;
}

// Dropout and its gradient apply the same mask: out[i] = keep(i) ? in[i] / (1 - p) : in[i] * 0.
// A dropped element is in[i] * 0, not 0, so that NaN and infinity stay NaN as PyTorch's
// input * mask keeps them (and -x gives -0 as it does there). A 16-bit in or out is read or
// written as it is (half_chunks.h).
remat_status apply_dropout_mask(const KernelArgs& args) {
  const uint8_t x_dtype = in_ref(args, 0).dtype, y_dtype = out_ref(args, 0).dtype;
  const int64_t n = out_ref(args, 0).numel;
  const uint64_t key = static_cast<uint64_t>(iattr(*args.call, attr::dropout::key));
  const float p = fattr(*args.call, attr::dropout::p);
  const float keep_scale = 1.0f - p;
  const uint64_t seed = args.ctx->seed, step = args.ctx->step;
  // A data-parallel rank's rows are rows rank x B.. of the whole batch (StepContext::rank).
  const uint64_t first = args.ctx->rank * static_cast<uint64_t>(n);
  parallel_for(args, n, kElementGrain, [&](int64_t begin, int64_t end, uint32_t) {
    // One Philox call yields the words of elements 4g..4g+3 (see philox_word()).
    uint64_t group = ~uint64_t{0};
    Philox4 r{};
    // Elements begin + k.. of y from those of x.
    auto mask = [&](const float* __restrict x, float* __restrict y, int64_t k, int64_t w) {
      for (int64_t i = 0; i < w; ++i) {
        const uint64_t e = first + static_cast<uint64_t>(begin + k + i);
        if ((e >> 2) != group) {
          group = e >> 2;
          r = philox4x32(static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                         static_cast<uint32_t>(step), static_cast<uint32_t>(key),
                         static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
        }
        y[i] = uniform01(r.v[e & 3]) >= p ? x[i] / keep_scale : x[i] * 0.0f;
      }
    };
    for_half_chunks(args.in[0], x_dtype, args.out[0], y_dtype, begin, end - begin, mask);
  });
  return REMAT_OK;
}

constexpr float kTwoOverSqrtPi = 1.12837916709551257390f;

// x^p as torch.pow(x, p) computes it: the exponents it special-cases exactly, powf otherwise.
float power(float x, float p) {
  if (p == 1.0f) return x;
  if (p == 2.0f) return x * x;
  if (p == 3.0f) return x * x * x;
  if (p == 0.5f) return sqrtf(x);
  if (p == -0.5f) return 1.0f / sqrtf(x);
  if (p == -1.0f) return 1.0f / x;
  if (p == 0.0f) return 1.0f;
  return powf(x, p);
}

}  // namespace

// A 16-bit x or y is read or written as it is, a row at a time (half_chunks.h).
remat_status bias_add(const KernelArgs& args) {
  const float* __restrict b = in_f32(args, 1);
  const int64_t nb = in_ref(args, 1).numel;
  const int64_t n = out_ref(args, 0).numel;
  if (nb == 0) return REMAT_OK;
  const int64_t rows = n / nb;
  const uint8_t x_dtype = in_ref(args, 0).dtype, y_dtype = out_ref(args, 0).dtype;
  parallel_for(args, rows, (kElementGrain + nb - 1) / nb, [&](int64_t r0, int64_t r1, uint32_t) {
    for (int64_t r = r0 * nb; r < r1 * nb; r += nb) {
      for_half_chunks(args.in[0], x_dtype, args.out[0], y_dtype, r, nb,
                      [b](const float* __restrict x, float* __restrict y, int64_t j0, int64_t w) {
                        for (int64_t j = 0; j < w; ++j) y[j] = x[j] + b[j0 + j];
                      });
    }
  });
  return REMAT_OK;
}

// Threads take runs of columns (16 at least, more when there are few rows); each column is
// summed over the rows in order in double (Accum, isa/lane_sum.h), so the cut changes no bits.
// A 16-bit dy is read as it is, widened a row at a time (widening.h: reads_16_bit_input).
remat_status reduce_leading(const KernelArgs& args) {
  const TensorRef& dy_ref = in_ref(args, 0);
  float* __restrict db = out_f32(args, 0);
  const int64_t nb = out_ref(args, 0).numel;
  const int64_t rows = nb > 0 ? dy_ref.numel / nb : 0;
  const int64_t grain = rows > 0 && rows < kElementGrain / 16 ? kElementGrain / rows : 16;
  parallel_for(args, nb, grain, [&](int64_t c0, int64_t c1, uint32_t) {
    for (int64_t j0 = c0; j0 < c1; j0 += kColumnSumsWidth) {
      const int64_t w = c1 - j0 < kColumnSumsWidth ? c1 - j0 : kColumnSumsWidth;
      if (kBuildHalfFloats && is_half_float(dy_ref.dtype)) {
        column_sums_half_span(dy_ref.dtype, static_cast<const uint16_t*>(args.in[0]) + j0, rows, nb,
                              db + j0, w);
      } else {
        column_sums_span(in_f32(args, 0) + j0, rows, nb, db + j0, w);
      }
    }
  });
  return REMAT_OK;
}

remat_status add(const KernelArgs& args) {
  return binary(args, [](float a, float b) { return a + b; });
}

remat_status mul(const KernelArgs& args) {
  return binary(args, [](float a, float b) { return a * b; });
}

remat_status scale(const KernelArgs& args) {
  const float alpha = fattr(*args.call, attr::scale::alpha);
  return unary(args, [alpha](float x) { return alpha * x; });
}

// relu(NaN) = NaN and its gradient passes dy where y is NaN, as PyTorch's clamp_min and
// threshold_backward (y <= 0 ? 0 : dy) do: a NaN is never turned into 0.
remat_status relu(const KernelArgs& args) {
  return unary(args, [](float x) { return x <= 0.0f ? 0.0f : x; });
}

remat_status relu_grad(const KernelArgs& args) {
  return binary(args, [](float dy, float y) { return y <= 0.0f ? 0.0f : dy; });
}

remat_status gelu(const KernelArgs& args) {
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  parallel_for(
      args, out_ref(args, 0).numel, kElementGrain,
      [&](int64_t begin, int64_t end, uint32_t) { gelu_span(x + begin, y + begin, end - begin); });
  return REMAT_OK;
}

remat_status gelu_grad(const KernelArgs& args) {
  const float* dy = in_f32(args, 0);
  const float* x = in_f32(args, 1);
  float* dx = out_f32(args, 0);
  parallel_for(args, out_ref(args, 0).numel, kElementGrain,
               [&](int64_t begin, int64_t end, uint32_t) {
                 gelu_grad_span(dy + begin, x + begin, dx + begin, end - begin);
               });
  return REMAT_OK;
}

remat_status tanh(const KernelArgs& args) {
  return unary(args, [](float x) { return tanhf(x); });
}

remat_status tanh_grad(const KernelArgs& args) {
  return binary(args, [](float dy, float y) { return dy * (1.0f - y * y); });
}

remat_status sigmoid(const KernelArgs& args) {
  return unary(args, [](float x) { return 1.0f / (1.0f + expf(-x)); });
}

remat_status sigmoid_grad(const KernelArgs& args) {
  return binary(args, [](float dy, float y) { return dy * y * (1.0f - y); });
}

remat_status pow_scalar(const KernelArgs& args) {
  const float p = fattr(*args.call, attr::pow_scalar::exponent);
  return unary(args, [p](float x) { return power(x, p); });
}

remat_status pow_scalar_grad(const KernelArgs& args) {
  const float p = fattr(*args.call, attr::pow_scalar_grad::exponent);
  if (p == 0.0f) return binary(args, [](float dy, float) { return dy * 0.0f; });
  return binary(args, [p](float dy, float x) { return dy * (p * power(x, p - 1.0f)); });
}

remat_status square_root(const KernelArgs& args) {
  return unary(args, [](float x) { return sqrtf(x); });
}

remat_status square_root_grad(const KernelArgs& args) {
  return binary(args, [](float dy, float y) { return dy / (2.0f * y); });
}

remat_status leaky_relu(const KernelArgs& args) {
  const float alpha = fattr(*args.call, attr::leaky_relu::alpha);
  return unary(args, [alpha](float x) { return x > 0.0f ? x : x * alpha; });
}

remat_status leaky_relu_grad(const KernelArgs& args) {
  const float alpha = fattr(*args.call, attr::leaky_relu_grad::alpha);
  return binary(args, [alpha](float dy, float x) { return x > 0.0f ? dy : dy * alpha; });
}

remat_status clip(const KernelArgs& args) {
  const float low = fattr(*args.call, attr::clip::low), high = fattr(*args.call, attr::clip::high);
  return unary(args, [low, high](float x) { return x < low ? low : x > high ? high : x; });
}

remat_status clip_grad(const KernelArgs& args) {
  const float low = fattr(*args.call, attr::clip_grad::low);
  const float high = fattr(*args.call, attr::clip_grad::high);
  return binary(args, [low, high](float dy, float x) { return low < x && x < high ? dy : 0.0f; });
}

remat_status hard_sigmoid(const KernelArgs& args) {
  const float alpha = fattr(*args.call, attr::hard_sigmoid::alpha);
  const float beta = fattr(*args.call, attr::hard_sigmoid::beta);
  return unary(args, [alpha, beta](float x) {
    const float t = alpha * x + beta;
    return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
  });
}

remat_status hard_sigmoid_grad(const KernelArgs& args) {
  const float alpha = fattr(*args.call, attr::hard_sigmoid_grad::alpha);
  const float beta = fattr(*args.call, attr::hard_sigmoid_grad::beta);
  return binary(args, [alpha, beta](float dy, float x) {
    const float t = alpha * x + beta;
    return 0.0f < t && t < 1.0f ? alpha * dy : 0.0f;
  });
}

remat_status error_function(const KernelArgs& args) {
  return unary(args, [](float x) { return erff(x); });
}

remat_status error_function_grad(const KernelArgs& args) {
  return binary(args, [](float dy, float x) { return kTwoOverSqrtPi * expf(-x * x) * dy; });
}

remat_status fill(const KernelArgs& args) {
  const float value = fattr(*args.call, attr::fill::value);
  float* __restrict y = out_f32(args, 0);
  const int64_t n = out_ref(args, 0).numel;
  for (int64_t i = 0; i < n; ++i) y[i] = value;
  return REMAT_OK;
}

remat_status dropout(const KernelArgs& args) { return apply_dropout_mask(args); }

remat_status dropout_grad(const KernelArgs& args) { return apply_dropout_mask(args); }

}  // namespace cpu
}  // namespace remat
