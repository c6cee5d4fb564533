// Every build of batch norm's channel loops this CPU runs (backends/cpu/ops/batchnorm_channels.h),
// not only the one the kernels pick: forward statistics and output, and the backward, against
// float64 on a channel of rows longer and shorter than the 8 summing lanes, with a large mean.
#include "tests/cmocka_cpp.h"

#include <math.h>

#include <vector>

#include "backends/cpu/ops/batchnorm_channels.h"
#include "op_harness.h"

namespace {

using remat::cpu::BatchNormChannel;
using remat::cpu::BatchNormGradChannel;
using remat::cpu::ChannelRows;

struct Build {
  const char* name;
  void (*forward)(const ChannelRows&, const BatchNormChannel&);
  void (*backward)(const ChannelRows&, const BatchNormGradChannel&);
};

std::vector<Build> builds() {
  std::vector<Build> out = {{"baseline", remat::cpu::batch_norm_channel_baseline,
                             remat::cpu::batch_norm_grad_channel_baseline}};
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back(
        {"avx2", remat::cpu::batch_norm_channel_avx2, remat::cpu::batch_norm_grad_channel_avx2});
  }
  if (__builtin_cpu_supports("avx512f")) {
    out.push_back({"avx512", remat::cpu::batch_norm_channel_avx512,
                   remat::cpu::batch_norm_grad_channel_avx512});
  }
#endif
  return out;
}

void near(double got, double want, double tolerance, const char* build, const char* what,
          int64_t inner) {
  if (!(fabs(got - want) <= tolerance * (1.0 + fabs(want)))) {
    fail_msg("%s, rows of %lld: %s = %.9g, float64 gives %.9g", build,
             static_cast<long long>(inner), what, got, want);
  }
}

void every_build_matches_float64(void**) {
  const float gamma = 1.5f, beta = -0.25f, eps = 1e-5f;
  for (const Build& b : builds()) {
    for (int64_t inner : {int64_t{3}, int64_t{8}, int64_t{37}}) {
      // 5 images of one channel, 2 channels apart (the other channel is left alone).
      const ChannelRows rows{5, inner, 2 * inner};
      ops_test::Rng rng(static_cast<uint64_t>(inner));
      std::vector<float> x(static_cast<size_t>(rows.images * rows.stride)), dy(x.size());
      for (float& v : x) v = 100.0f + static_cast<float>(rng.uniform(-1, 1));
      for (float& v : dy) v = static_cast<float>(rng.uniform(-1, 1));
      std::vector<float> y(x.size(), 7.0f), dx(x.size(), 7.0f);
      float mean = 0, var = 0, dgamma = 0, dbeta = 0;
      const uint8_t f32 = REMAT_DTYPE_F32;
      b.forward(rows, {{x.data(), f32}, gamma, beta, eps, {y.data(), f32}, &mean, &var});
      b.backward(rows, {{dy.data(), f32},
                        {x.data(), f32},
                        mean,
                        var,
                        gamma,
                        eps,
                        {dx.data(), f32},
                        &dgamma,
                        &dbeta});

      const double count = static_cast<double>(rows.images * inner);
      double m = 0, v = 0;
      for (int64_t n = 0; n < rows.images; ++n)
        for (int64_t i = 0; i < inner; ++i) m += x[n * rows.stride + i];
      m /= count;
      for (int64_t n = 0; n < rows.images; ++n)
        for (int64_t i = 0; i < inner; ++i)
          v += (x[n * rows.stride + i] - m) * (x[n * rows.stride + i] - m);
      v /= count;
      near(mean, m, 1e-7, b.name, "mean", inner);
      near(var, v, 1e-5, b.name, "var", inner);
      const double rstd = 1.0 / sqrt(v + eps);
      double sum_dy = 0, sum_dy_xhat = 0;
      for (int64_t n = 0; n < rows.images; ++n) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = n * rows.stride + i;
          sum_dy += dy[k];
          sum_dy_xhat += dy[k] * (x[k] - m) * rstd;
        }
      }
      near(dbeta, sum_dy, 1e-5, b.name, "dbeta", inner);
      near(dgamma, sum_dy_xhat, 1e-4, b.name, "dgamma", inner);
      for (int64_t n = 0; n < rows.images; ++n) {
        for (int64_t i = 0; i < rows.stride; ++i) {
          const int64_t k = n * rows.stride + i;
          if (i >= inner) {  // the other channel's elements: untouched
            if (y[k] != 7.0f || dx[k] != 7.0f) fail_msg("%s: wrote outside the channel", b.name);
            continue;
          }
          const double xhat = (x[k] - m) * rstd;
          near(y[k], xhat * gamma + beta, 1e-4, b.name, "y", inner);
          near(dx[k], rstd * gamma * (dy[k] - sum_dy / count - xhat * sum_dy_xhat / count), 1e-3,
               b.name, "dx", inner);
        }
      }
    }
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_build_matches_float64),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
