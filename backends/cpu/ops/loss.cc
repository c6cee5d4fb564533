// Loss kernels: mean softmax cross-entropy and mean squared error, with their gradients.
#include <math.h>

#include <cmath>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/isa/lane_sum.h"

namespace remat {
namespace cpu {
namespace {

remat_status bad_label(const KernelArgs& args, const char* name, int32_t label, int64_t row,
                       int64_t classes) {
  return set_error(args.err, REMAT_ERROR_OUT_OF_RANGE,
                   "op %u (%s): label %d at position %lld outside [0, %lld)",
                   static_cast<unsigned>(args.call->index), name, static_cast<int>(label),
                   static_cast<long long>(row), static_cast<long long>(classes));
}

}  // namespace

remat_status softmax_cross_entropy(const KernelArgs& args) {
  const float* __restrict logits = in_f32(args, 0);
  const int32_t* __restrict labels = static_cast<const int32_t*>(args.in[1]);
  float* __restrict loss = out_f32(args, 0);
  float* __restrict probs = out_f32(args, 1);
  const int64_t c = last_dim(in_ref(args, 0));
  const int64_t rows = c > 0 ? in_ref(args, 0).numel / c : 0;
  // Sums in double (Accum): the loss of a large batch is a mean of many terms.
  Accum total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t label = labels[r];
    if (label < 0 || label >= c) return bad_label(args, "softmax_cross_entropy", label, r, c);
    const float* x = logits + r * c;
    float* p = probs + r * c;
    float mx = x[0];
    for (int64_t j = 1; j < c; ++j) mx = x[j] > mx ? x[j] : mx;
    Accum sum = 0;
    for (int64_t j = 0; j < c; ++j) {
      p[j] = expf(x[j] - mx);
      sum += p[j];
    }
    const float inv = static_cast<float>(Accum(1) / sum);
    for (int64_t j = 0; j < c; ++j) p[j] *= inv;
    // log softmax(x)[label] = x[label] - max - log(sum exp(x - max)).
    total -= static_cast<Accum>(x[label]) - mx - std::log(sum);
  }
  loss[0] = rows > 0 ? static_cast<float>(total / static_cast<Accum>(rows)) : 0.0f;
  return REMAT_OK;
}

remat_status softmax_cross_entropy_grad(const KernelArgs& args) {
  const float* __restrict probs = in_f32(args, 0);
  const int32_t* __restrict labels = static_cast<const int32_t*>(args.in[1]);
  float* __restrict dlogits = out_f32(args, 0);
  const int64_t c = last_dim(in_ref(args, 0));
  const int64_t rows = c > 0 ? in_ref(args, 0).numel / c : 0;
  const float inv_n = rows > 0 ? static_cast<float>(1.0 / static_cast<double>(rows)) : 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t label = labels[r];
    if (label < 0 || label >= c) return bad_label(args, "softmax_cross_entropy_grad", label, r, c);
    const float* p = probs + r * c;
    float* d = dlogits + r * c;
    for (int64_t j = 0; j < c; ++j) d[j] = p[j] * inv_n;
    d[label] = (p[label] - 1.0f) * inv_n;
  }
  return REMAT_OK;
}

remat_status mse(const KernelArgs& args) {
  const float* __restrict pred = in_f32(args, 0);
  const float* __restrict target = in_f32(args, 1);
  const int64_t n = in_ref(args, 0).numel;
  Accum sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Accum d = static_cast<Accum>(pred[i]) - target[i];
    sum += d * d;
  }
  out_f32(args, 0)[0] = n > 0 ? static_cast<float>(sum / static_cast<Accum>(n)) : 0.0f;
  return REMAT_OK;
}

remat_status mse_grad(const KernelArgs& args) {
  const float* __restrict pred = in_f32(args, 0);
  const float* __restrict target = in_f32(args, 1);
  float* __restrict dpred = out_f32(args, 0);
  const int64_t n = in_ref(args, 0).numel;
  const float k = n > 0 ? static_cast<float>(2.0 / static_cast<double>(n)) : 0.0f;
  for (int64_t i = 0; i < n; ++i) dpred[i] = k * (pred[i] - target[i]);
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
