// Optimizer steps on the GPU, in place: SGD (with momentum) and Adam / AdamW as torch.optim.
// Both skip their update when an earlier op of the step reported bad data, so a failed step
// leaves parameters and moments as they were (as the CPU backend, which stops at the error).
#include <math.h>

#include "backends/cuda/cuda_common.cuh"

namespace remat {
namespace cuda {
namespace {

// Pointers are not __restrict__: outputs alias inputs (updated in place, element by element).
__global__ void sgd_kernel(const float* param_in, const float* grad, float* param,
                           const float* vel_in, float* vel, int64_t n, float lr, float momentum,
                           float wd, const DeviceState* state) {
  if (state->error != 0) return;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const float g = grad[i] + wd * param_in[i];
    if (vel == nullptr) {
      param[i] = param_in[i] - lr * g;
    } else {
      const float v = momentum * vel_in[i] + g;
      vel[i] = v;
      param[i] = param_in[i] - lr * v;
    }
  }
}

struct AdamAttrs {
  float lr, b1, b2, eps, wd;
  bool decoupled;
};

__global__ void adam_kernel(const float* param_in, const float* grad, const float* m_in,
                            const float* v_in, float* param, float* m_out, float* v_out,
                            int64_t n, AdamAttrs at, const DeviceState* state) {
  if (state->error != 0) return;
  // The step's scalars in double from the device-side step (t = step + 1), once per block.
  __shared__ float step_size, bias2_sqrt;
  if (threadIdx.x == 0) {
    const double t = static_cast<double>(state->step) + 1.0;
    const double bias1 = 1.0 - pow(static_cast<double>(at.b1), t);
    const double bias2 = 1.0 - pow(static_cast<double>(at.b2), t);
    step_size = static_cast<float>(static_cast<double>(at.lr) / bias1);
    bias2_sqrt = static_cast<float>(sqrt(bias2));
  }
  __syncthreads();
  const float one_minus_b1 = static_cast<float>(1.0 - static_cast<double>(at.b1));
  const float one_minus_b2 = static_cast<float>(1.0 - static_cast<double>(at.b2));
  const float decay = static_cast<float>(1.0 - static_cast<double>(at.lr) * at.wd);
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    float p = param_in[i];
    float g = grad[i];
    if (at.decoupled) {
      p *= decay;
    } else {
      g += at.wd * p;
    }
    const float m = at.b1 * m_in[i] + one_minus_b1 * g;
    const float v = at.b2 * v_in[i] + one_minus_b2 * g * g;
    m_out[i] = m;
    v_out[i] = v;
    param[i] = p - step_size * (m / (sqrtf(v) / bias2_sqrt + at.eps));
  }
}

}  // namespace

remat_status sgd_update(const KernelArgs& a) {
  const float lr = fattr(a, 0, 0.0f);
  const float momentum = fattr(a, 1, 0.0f);
  const float wd = fattr(a, 2, 0.0f);
  const int64_t n = out_ref(a, 0).numel;
  const float* vel_in = nullptr;
  float* vel = nullptr;
  if (momentum != 0.0f) {
    if (a.call->num_inputs < 3 || a.call->num_outputs < 2) {
      return set_error(a.err, REMAT_ERROR_INVALID_ARGUMENT,
                       "op %u (sgd_update): momentum %g needs a velocity tensor", a.call->index,
                       static_cast<double>(momentum));
    }
    vel_in = static_cast<const float*>(a.in[2]);
    vel = static_cast<float*>(a.out[1]);
  }
  if (n == 0) return REMAT_OK;
  sgd_kernel<<<grid_for(n), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const float*>(a.in[1]),
      static_cast<float*>(a.out[0]), vel_in, vel, n, lr, momentum, wd, a.state);
  return check_cuda(a, cudaGetLastError(), "sgd_update kernel");
}

remat_status adam_update(const KernelArgs& a) {
  AdamAttrs at;
  at.lr = fattr(a, 0, 1e-3f);
  at.b1 = fattr(a, 1, 0.9f);
  at.b2 = fattr(a, 2, 0.999f);
  at.eps = fattr(a, 3, 1e-8f);
  at.wd = fattr(a, 4, 0.0f);
  at.decoupled = iattr(a, 0, 0) != 0;
  const int64_t n = out_ref(a, 0).numel;
  if (n == 0) return REMAT_OK;
  adam_kernel<<<grid_for(n), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const float*>(a.in[1]),
      static_cast<const float*>(a.in[2]), static_cast<const float*>(a.in[3]),
      static_cast<float*>(a.out[0]), static_cast<float*>(a.out[1]), static_cast<float*>(a.out[2]),
      n, at, a.state);
  return check_cuda(a, cudaGetLastError(), "adam_update kernel");
}

}  // namespace cuda
}  // namespace remat
