// Optimizer steps, in place: SGD (with momentum) and Adam / AdamW as torch.optim computes them;
// and the non-finite guard that runs before them. Each element is updated on its own, so the
// parts parallel_for() hands the threads give the same bits whatever their number.
#include <math.h>
#include <string.h>

#include <atomic>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/isa/math_span.h"
#include "backends/cpu/parallel.h"

namespace remat {
namespace cpu {

// Before an in-place update's loop: its outputs alias its inputs only element for element, so
// GCC may vectorise it without the overlap checks that would send it down the scalar path
// (ivdep; clang, which builds only the fuzzers here, warns on the pragma).
#if defined(__clang__)
#define REMAT_IN_PLACE_LOOP
#else
#define REMAT_IN_PLACE_LOOP _Pragma("GCC ivdep")
#endif

// Elements per part of an optimizer's threads (64 KiB of each array).
constexpr int64_t kUpdateGrain = 1 << 14;

// The first non-finite element stops the step here, before the updates that follow the check.
// The threads only look for one; the lowest is then found on this thread (a 32-bit flag:
// microcontrollers have no 64-bit atomics).
remat_status finite_check(const KernelArgs& args) {
  constexpr uint32_t kExponentBits = 0x7f800000u;
  const float* __restrict x = in_f32(args, 0);
  const int64_t n = in_ref(args, 0).numel;
  std::atomic<int> found{0};
  parallel_for(args, n, kUpdateGrain, [&](int64_t begin, int64_t end, uint32_t) {
    // A float is infinite or NaN exactly when its exponent bits are all ones. Tested on the
    // bits, the scan vectorises on every instruction set; isfinite() stayed scalar (7 GB/s
    // against 50 on one core).
    uint32_t bad = 0;
    for (int64_t i = begin; i < end; ++i) {
      uint32_t bits;
      memcpy(&bits, x + i, sizeof bits);
      bad |= (bits & kExponentBits) == kExponentBits ? 1u : 0u;
    }
    if (bad != 0) found.store(1, std::memory_order_relaxed);
  });
  if (found.load(std::memory_order_relaxed) == 0) return REMAT_OK;
  int64_t i = 0;
  while (i + 1 < n && isfinite(x[i])) ++i;
  args.err->failed_op = args.call->index + 1;
  return set_error(args.err, REMAT_ERROR_NONFINITE, "element %lld is %g (op %u, finite_check)",
                   static_cast<long long>(i), static_cast<double>(x[i]),
                   static_cast<unsigned>(args.call->index));
}

// Outputs alias inputs (param, velocity, m, v are updated in place), so no pointer here is
// __restrict: each element is read before it is written, one element at a time.
remat_status sgd_update(const KernelArgs& args) {
  const float* param_in = in_f32(args, 0);
  const float* grad = in_f32(args, 1);
  float* param = out_f32(args, 0);
  const float lr = fattr(*args.call, attr::sgd_update::lr);
  const float momentum = fattr(*args.call, attr::sgd_update::momentum);
  const float wd = fattr(*args.call, attr::sgd_update::weight_decay);
  const int64_t n = out_ref(args, 0).numel;
  if (momentum == 0.0f) {
    parallel_for(args, n, kUpdateGrain, [=](int64_t begin, int64_t end, uint32_t) {
      REMAT_IN_PLACE_LOOP
      for (int64_t i = begin; i < end; ++i) {
        const float g = grad[i] + wd * param_in[i];
        param[i] = param_in[i] - lr * g;
      }
    });
    return REMAT_OK;
  }
  if (args.call->num_inputs < 3 || args.call->num_outputs < 2) {
    return set_error(args.err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (sgd_update): momentum %g needs a velocity tensor",
                     static_cast<unsigned>(args.call->index), static_cast<double>(momentum));
  }
  const float* vel_in = in_f32(args, 2);
  float* vel = out_f32(args, 1);
  parallel_for(args, n, kUpdateGrain, [=](int64_t begin, int64_t end, uint32_t) {
    REMAT_IN_PLACE_LOOP
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad[i] + wd * param_in[i];
      const float v = momentum * vel_in[i] + g;
      vel[i] = v;
      param[i] = param_in[i] - lr * v;
    }
  });
  return REMAT_OK;
}

remat_status adam_update(const KernelArgs& args) {
  const float* param_in = in_f32(args, 0);
  const float* grad = in_f32(args, 1);
  const float* m_in = in_f32(args, 2);
  const float* v_in = in_f32(args, 3);
  float* param = out_f32(args, 0);
  float* m_out = out_f32(args, 1);
  float* v_out = out_f32(args, 2);
  const float lr = fattr(*args.call, attr::adam_update::lr);
  const float b1 = fattr(*args.call, attr::adam_update::b1);
  const float b2 = fattr(*args.call, attr::adam_update::b2);
  const float eps = fattr(*args.call, attr::adam_update::eps);
  const float wd = fattr(*args.call, attr::adam_update::weight_decay);
  const bool decoupled = iattr(*args.call, attr::adam_update::decoupled) != 0;
  const int64_t n = out_ref(args, 0).numel;
  // Scalars in double, then rounded once, as torch computes them on the Python side.
  const double t = static_cast<double>(args.ctx->step) + 1.0;
  const double bias1 = 1.0 - pow(static_cast<double>(b1), t);
  const double bias2 = 1.0 - pow(static_cast<double>(b2), t);
  const float step_size = static_cast<float>(static_cast<double>(lr) / bias1);
  const float bias2_sqrt = static_cast<float>(sqrt(bias2));
  const float one_minus_b1 = static_cast<float>(1.0 - static_cast<double>(b1));
  const float one_minus_b2 = static_cast<float>(1.0 - static_cast<double>(b2));
  const float decay = static_cast<float>(1.0 - static_cast<double>(lr) * wd);
  const AdamScalars scalars{b1,         b2,  one_minus_b1, one_minus_b2, step_size,
                            bias2_sqrt, eps, wd,           decay,        decoupled};
  parallel_for(args, n, kUpdateGrain, [&](int64_t begin, int64_t end, uint32_t) {
    adam_span(scalars, param_in + begin, grad + begin, m_in + begin, v_in + begin, param + begin,
              m_out + begin, v_out + begin, end - begin);
  });
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
