// Row-wise normalisations over the last axis: softmax, log-softmax and layer norm, with their
// gradients. Rows (and the columns of layer norm's parameter gradients) are shared out among
// the backend's threads; each row or column is summed by one thread in its own order, so the
// bits do not depend on the thread count. A row's sums run in eight interleaved double (Accum)
// lanes (isa/lane_sum.h), so that they vectorise rather than wait on one add after another.
// Layer norm and its gradient read and write their 16-bit rows as they are where kNormRowSlots
// rows fit the thread's strip (widening.h: reads_16_bit_input), a row widened into it at a time.
#include <math.h>

#include <cmath>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/isa/lane_sum.h"
#include "backends/cpu/isa/math_span.h"
#include "backends/cpu/ops/work_splits.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/widening.h"
#include "plan/half_float.h"

namespace remat {
namespace cpu {
namespace {

constexpr int64_t kColumnBlock = kLayerNormColumnBlock;
constexpr int64_t kColumnGrain = kLayerNormColumnGrain;

// Elements a thread's part should hold at least, to be worth waking a thread for.
constexpr int64_t kRowWork = 1 << 14;

// Calls body(r, worker) for every row r in [0, rows) of |n| elements, rows shared out among the
// threads.
template <typename Body>
void for_each_row_on(const KernelArgs& args, int64_t rows, int64_t n, const Body& body) {
  const int64_t grain = n >= kRowWork ? 1 : kRowWork / (n > 0 ? n : 1);
  parallel_for(args, rows, grain, [&](int64_t begin, int64_t end, uint32_t worker) {
    for (int64_t r = begin; r < end; ++r) body(r, worker);
  });
}

// Calls body(r) for every row r in [0, rows) of |n| elements, rows shared out among the threads.
template <typename Body>
void for_each_row(const KernelArgs& args, int64_t rows, int64_t n, const Body& body) {
  for_each_row_on(args, rows, n, [&](int64_t r, uint32_t) { body(r); });
}

// Rows of a float tensor of a layer norm op as float32: a float32 tensor's own, or a 16-bit
// one's widened into row |slot| of the thread's strip (kNormRowSlots rows of n floats in
// product_strip, where widening.h's reads_16_bit_input lets them).
struct Rows {
  const void* data;
  uint8_t dtype;
  int64_t n;
  int slot;  // which of the thread's scratch rows a 16-bit row goes through

  const float* read(const KernelArgs& a, uint32_t worker, int64_t r) const {
    if (!is_half_float(dtype)) return static_cast<const float*>(data) + r * n;
    float* row = product_strip(a, worker) + slot * n;
    widen_span(dtype, static_cast<const uint16_t*>(data) + r * n, row, n);
    return row;
  }
  // Where row r is computed: the tensor's own, or the thread's scratch row for write() to round.
  float* target(const KernelArgs& a, uint32_t worker, int64_t r) const {
    if (!is_half_float(dtype)) return static_cast<float*>(const_cast<void*>(data)) + r * n;
    return product_strip(a, worker) + slot * n;
  }
  void write(const KernelArgs& a, uint32_t worker, int64_t r) const {
    if (!is_half_float(dtype)) return;
    narrow_span(dtype, product_strip(a, worker) + slot * n,
                static_cast<uint16_t*>(const_cast<void*>(data)) + r * n, n);
  }
  // |w| elements of row r from column j0 as float32, into |block| where 16-bit.
  const float* span(int64_t r, int64_t j0, int64_t w, float* block) const {
    if (!is_half_float(dtype)) return static_cast<const float*>(data) + r * n + j0;
    widen_span(dtype, static_cast<const uint16_t*>(data) + r * n + j0, block, w);
    return block;
  }
};

Rows input_rows(const KernelArgs& a, int i, int64_t n, int slot) {
  return {a.in[i], kBuildHalfFloats ? in_ref(a, i).dtype : static_cast<uint8_t>(REMAT_DTYPE_F32), n,
          slot};
}
Rows output_rows(const KernelArgs& a, int o, int64_t n, int slot) {
  return {a.out[o],
          kBuildHalfFloats ? a.call->outputs[o]->dtype : static_cast<uint8_t>(REMAT_DTYPE_F32), n,
          slot};
}

}  // namespace

remat_status softmax(const KernelArgs& args) {
  const float* __restrict x = in_f32(args, 0);
  float* __restrict y = out_f32(args, 0);
  const int64_t n = last_dim(in_ref(args, 0));
  const int64_t rows = n > 0 ? in_ref(args, 0).numel / n : 0;
  for_each_row(args, rows, n, [&](int64_t r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    // Subtracting the row max keeps exp() finite.
    float mx = xr[0];
    for (int64_t j = 1; j < n; ++j) mx = xr[j] > mx ? xr[j] : mx;
    exp_shifted_span(xr, mx, yr, n);
    const Accum sum = lane_sum(n, [&](int64_t j) { return static_cast<Accum>(yr[j]); });
    const float inv = static_cast<float>(Accum(1) / sum);
    for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
  });
  return REMAT_OK;
}

remat_status softmax_grad(const KernelArgs& args) {
  const float* __restrict dy = in_f32(args, 0);
  const float* __restrict y = in_f32(args, 1);
  float* __restrict dx = out_f32(args, 0);
  const int64_t n = last_dim(in_ref(args, 0));
  const int64_t rows = n > 0 ? in_ref(args, 0).numel / n : 0;
  for_each_row(args, rows, n, [&](int64_t r) {
    const float* dyr = dy + r * n;
    const float* yr = y + r * n;
    const float d = static_cast<float>(
        lane_sum(n, [&](int64_t j) { return static_cast<Accum>(dyr[j]) * yr[j]; }));
    for (int64_t j = 0; j < n; ++j) dx[r * n + j] = yr[j] * (dyr[j] - d);
  });
  return REMAT_OK;
}

remat_status log_softmax(const KernelArgs& args) {
  const float* __restrict x = in_f32(args, 0);
  float* __restrict y = out_f32(args, 0);
  const int64_t n = last_dim(in_ref(args, 0));
  const int64_t rows = n > 0 ? in_ref(args, 0).numel / n : 0;
  for_each_row(args, rows, n, [&](int64_t r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float mx = xr[0];
    for (int64_t j = 1; j < n; ++j) mx = xr[j] > mx ? xr[j] : mx;
    Accum sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += expf(xr[j] - mx);
    const float log_sum = static_cast<float>(std::log(sum));
    for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mx) - log_sum;
  });
  return REMAT_OK;
}

remat_status log_softmax_grad(const KernelArgs& args) {
  const float* __restrict dy = in_f32(args, 0);
  const float* __restrict y = in_f32(args, 1);
  float* __restrict dx = out_f32(args, 0);
  const int64_t n = last_dim(in_ref(args, 0));
  const int64_t rows = n > 0 ? in_ref(args, 0).numel / n : 0;
  for_each_row(args, rows, n, [&](int64_t r) {
    const float* dyr = dy + r * n;
    const float* yr = y + r * n;
    const float s =
        static_cast<float>(lane_sum(n, [&](int64_t j) { return static_cast<Accum>(dyr[j]); }));
    for (int64_t j = 0; j < n; ++j) dx[r * n + j] = dyr[j] - expf(yr[j]) * s;
  });
  return REMAT_OK;
}

remat_status layernorm(const KernelArgs& args) {
  const float* __restrict gamma = in_f32(args, 1);
  const float* __restrict beta = in_f32(args, 2);
  float* __restrict mean_out = out_f32(args, 1);
  float* __restrict rstd_out = out_f32(args, 2);
  const float eps = fattr(*args.call, attr::layernorm::eps);
  const int64_t n = last_dim(in_ref(args, 0));
  const int64_t rows = n > 0 ? in_ref(args, 0).numel / n : 0;
  const Rows x = input_rows(args, 0, n, 0), y = output_rows(args, 0, n, 1);
  for_each_row_on(args, rows, n, [&](int64_t r, uint32_t worker) {
    const float* __restrict xr = x.read(args, worker, r);
    // Two passes in double (Accum): the variance of large-mean rows stays accurate.
    const Accum mean =
        lane_sum(n, [&](int64_t j) { return static_cast<Accum>(xr[j]); }) / static_cast<Accum>(n);
    const Accum sq = lane_sum(n, [&](int64_t j) {
      const Accum d = xr[j] - mean;
      return d * d;
    });
    const Accum rstd = Accum(1) / std::sqrt(sq / static_cast<Accum>(n) + static_cast<Accum>(eps));
    const float m = static_cast<float>(mean), s = static_cast<float>(rstd);
    mean_out[r] = m;
    rstd_out[r] = s;
    float* __restrict yr = y.target(args, worker, r);
    for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - m) * s * gamma[j] + beta[j];
    y.write(args, worker, r);
  });
  return REMAT_OK;
}

remat_status layernorm_grad(const KernelArgs& args) {
  const float* __restrict mean = in_f32(args, 2);
  const float* __restrict rstd = in_f32(args, 3);
  const float* __restrict gamma = in_f32(args, 4);
  float* __restrict dgamma = out_f32(args, 1);
  float* __restrict dbeta = out_f32(args, 2);
  const int64_t n = last_dim(in_ref(args, 1));
  const int64_t rows = n > 0 ? in_ref(args, 1).numel / n : 0;
  const Rows dy = input_rows(args, 0, n, 0), x = input_rows(args, 1, n, 1),
             dx = output_rows(args, 0, n, 2);
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, xhat = (x-mean)*rstd.
  for_each_row_on(args, rows, n, [&](int64_t r, uint32_t worker) {
    const float* __restrict dyr = dy.read(args, worker, r);
    const float* __restrict xr = x.read(args, worker, r);
    const float m = mean[r], s = rstd[r];
    const Accum sum_g =
        lane_sum(n, [&](int64_t j) { return static_cast<Accum>(dyr[j] * gamma[j]); });
    const Accum sum_gx = lane_sum(
        n, [&](int64_t j) { return static_cast<Accum>(dyr[j] * gamma[j]) * ((xr[j] - m) * s); });
    const float mean_g = static_cast<float>(sum_g / static_cast<Accum>(n));
    const float mean_gx = static_cast<float>(sum_gx / static_cast<Accum>(n));
    float* __restrict dxr = dx.target(args, worker, r);
    for (int64_t j = 0; j < n; ++j) {
      const float xhat = (xr[j] - m) * s;
      dxr[j] = s * (dyr[j] * gamma[j] - mean_g - xhat * mean_gx);
    }
    dx.write(args, worker, r);
  });
  // dgamma and dbeta: runs of columns shared out among the threads, each column summed over the
  // rows in order.
  parallel_for(args, n, kColumnGrain, [&](int64_t begin, int64_t end, uint32_t) {
    Accum acc_g[kColumnBlock], acc_b[kColumnBlock];
    float dy_block[kColumnBlock], x_block[kColumnBlock];
    for (int64_t j0 = begin; j0 < end; j0 += kColumnBlock) {
      const int64_t w = end - j0 < kColumnBlock ? end - j0 : kColumnBlock;
      for (int64_t j = 0; j < w; ++j) acc_g[j] = acc_b[j] = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const float* __restrict dyr = dy.span(r, j0, w, dy_block);
        const float* __restrict xr = x.span(r, j0, w, x_block);
        const float m = mean[r], s = rstd[r];
        for (int64_t j = 0; j < w; ++j) {
          acc_g[j] += dyr[j] * ((xr[j] - m) * s);
          acc_b[j] += dyr[j];
        }
      }
      for (int64_t j = 0; j < w; ++j) {
        dgamma[j0 + j] = static_cast<float>(acc_g[j]);
        dbeta[j0 + j] = static_cast<float>(acc_b[j]);
      }
    }
  });
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
