// Sums over consecutive axes and their gradient: reduce_sum and broadcast.
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/ops/work_splits.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/isa/lane_sum.h"

namespace remat {
namespace cpu {
namespace {

// Output columns summed per pass (ops/work_splits.h).
constexpr int64_t kColumnBlock = kReduceColumnBlock;

// Elements a part of the work covers at least before it is worth a thread.
constexpr int64_t kWorkGrain = 1 << 14;

}  // namespace

remat_status reduce_sum(const KernelArgs& args) {
  const float* __restrict x = in_f32(args, 0);
  float* __restrict y = out_f32(args, 0);
  const ReducedView v = reduced_view(*args.call, in_ref(args, 0));
  const bool mean = iattr(*args.call, attr::reduce_sum::mean) != 0;
  const int64_t blocks = (v.inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t per_unit = v.n * (v.inner < kColumnBlock ? v.inner : kColumnBlock);
  const int64_t grain = per_unit > 0 && per_unit < kWorkGrain ? kWorkGrain / per_unit : 1;
  parallel_for(args, v.outer * blocks, grain, [&](int64_t u0, int64_t u1, uint32_t) {
    Accum acc[kColumnBlock];
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t o = u / blocks, i0 = (u % blocks) * kColumnBlock;
      const int64_t w = v.inner - i0 < kColumnBlock ? v.inner - i0 : kColumnBlock;
      for (int64_t k = 0; k < w; ++k) acc[k] = 0;
      for (int64_t j = 0; j < v.n; ++j) {
        const float* row = x + (o * v.n + j) * v.inner + i0;
        for (int64_t k = 0; k < w; ++k) acc[k] += row[k];
      }
      float* out = y + o * v.inner + i0;
      for (int64_t k = 0; k < w; ++k) {
        out[k] = static_cast<float>(mean ? acc[k] / static_cast<Accum>(v.n) : acc[k]);
      }
    }
  });
  return REMAT_OK;
}

remat_status broadcast(const KernelArgs& args) {
  const float* __restrict x = in_f32(args, 0);
  float* __restrict y = out_f32(args, 0);
  const ReducedView v = reduced_view(*args.call, out_ref(args, 0));
  const bool mean = iattr(*args.call, attr::broadcast::mean) != 0;
  const float n = static_cast<float>(v.n);
  const int64_t rows = v.outer * v.n;
  const int64_t grain = v.inner > 0 && v.inner < kWorkGrain ? kWorkGrain / v.inner : 1;
  parallel_for(args, rows, grain, [&](int64_t r0, int64_t r1, uint32_t) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* src = x + (r / v.n) * v.inner;
      float* dst = y + r * v.inner;
      if (mean) {
        for (int64_t i = 0; i < v.inner; ++i) dst[i] = src[i] / n;
      } else {
        for (int64_t i = 0; i < v.inner; ++i) dst[i] = src[i];
      }
    }
  });
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
