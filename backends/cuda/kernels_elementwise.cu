// Elementwise CUDA kernels: bias, add, mul, scale, activations with their gradients, dropout.
#include <math.h>

#include "backends/cuda/cuda_common.cuh"

namespace remat {
namespace cuda {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// Functors rather than lambdas: no --extended-lambda needed.
struct ScaleF {
  float alpha;
  __device__ float operator()(float x) const { return alpha * x; }
};
struct ReluF {
  __device__ float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
};
struct GeluF {
  __device__ float operator()(float x) const { return 0.5f * x * (1.0f + erff(x * kInvSqrt2)); }
};
struct TanhF {
  __device__ float operator()(float x) const { return tanhf(x); }
};
struct SigmoidF {
  __device__ float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); }
};
struct AddF {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MulF {
  __device__ float operator()(float a, float b) const { return a * b; }
};
struct ReluGradF {
  __device__ float operator()(float dy, float y) const { return y > 0.0f ? dy : 0.0f; }
};
struct GeluGradF {
  __device__ float operator()(float dy, float x) const {
    const float cdf = 0.5f * (1.0f + erff(x * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
    return dy * (cdf + x * pdf);
  }
};
struct TanhGradF {
  __device__ float operator()(float dy, float y) const { return dy * (1.0f - y * y); }
};
struct SigmoidGradF {
  __device__ float operator()(float dy, float y) const { return dy * y * (1.0f - y); }
};

template <typename F>
__global__ void unary_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, F f) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = f(x[i]);
}

template <typename F>
__global__ void binary_kernel(const float* __restrict__ a, const float* __restrict__ b,
                              float* __restrict__ c, int64_t n, F f) {
  for (int64_t i = global_index(); i < n; i += global_stride()) c[i] = f(a[i], b[i]);
}

__global__ void bias_add_kernel(const float* __restrict__ x, const float* __restrict__ b,
                                float* __restrict__ y, int64_t n, int64_t nb) {
  for (int64_t i = global_index(); i < n; i += global_stride()) y[i] = x[i] + b[i % nb];
}

// Column sums of a [rows, cols] matrix: a block owns 32 columns; its kColumnRows thread rows
// each sum a fixed stride of rows in double, then one thread adds the partials in order.
constexpr int kColumnRows = 16;

__global__ void column_sum_kernel(const float* __restrict__ dy, float* __restrict__ db,
                                  int64_t rows, int64_t cols) {
  __shared__ double part[kColumnRows][33];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  double acc = 0.0;
  if (col < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += kColumnRows) acc += dy[r * cols + col];
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    double s = 0.0;
    for (int k = 0; k < kColumnRows; ++k) s += part[k][threadIdx.x];
    db[col] = static_cast<float>(s);
  }
}

// One Philox call per four consecutive elements, as the CPU kernel walks them.
__global__ void dropout_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                               uint64_t key, float p, const DeviceState* __restrict__ state) {
  const uint64_t seed = state->seed, step = state->step;
  const float keep_scale = 1.0f - p;
  const int64_t groups = (n + 3) / 4;
  for (int64_t g = global_index(); g < groups; g += global_stride()) {
    const uint64_t idx = static_cast<uint64_t>(g) * 4;
    const DevPhilox4 r = dev_philox4x32(
        static_cast<uint32_t>(idx >> 2), static_cast<uint32_t>(idx >> 34),
        static_cast<uint32_t>(step), static_cast<uint32_t>(key), static_cast<uint32_t>(seed),
        static_cast<uint32_t>(seed >> 32));
    const int64_t i = static_cast<int64_t>(idx);
    const int64_t m = n - i < 4 ? n - i : 4;
    for (int64_t j = 0; j < m; ++j) {
      y[i + j] = dev_uniform01(r.v[j]) >= p ? x[i + j] / keep_scale : 0.0f;
    }
  }
}

template <typename F>
remat_status launch_unary(const KernelArgs& a, F f, const char* name) {
  const int64_t n = out_ref(a, 0).numel;
  if (n == 0) return REMAT_OK;
  unary_kernel<<<grid_for(n), kBlock, 0, a.stream>>>(static_cast<const float*>(a.in[0]),
                                                     static_cast<float*>(a.out[0]), n, f);
  return check_cuda(a, cudaGetLastError(), name);
}

template <typename F>
remat_status launch_binary(const KernelArgs& a, F f, const char* name) {
  const int64_t n = out_ref(a, 0).numel;
  if (n == 0) return REMAT_OK;
  binary_kernel<<<grid_for(n), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const float*>(a.in[1]),
      static_cast<float*>(a.out[0]), n, f);
  return check_cuda(a, cudaGetLastError(), name);
}

remat_status launch_dropout(const KernelArgs& a) {
  const int64_t n = out_ref(a, 0).numel;
  if (n == 0) return REMAT_OK;
  const uint64_t key = static_cast<uint64_t>(iattr(a, 0, 0));
  dropout_kernel<<<grid_for((n + 3) / 4), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<float*>(a.out[0]), n, key,
      fattr(a, 0, 0.0f), a.state);
  return check_cuda(a, cudaGetLastError(), "dropout kernel");
}

}  // namespace

remat_status bias_add(const KernelArgs& a) {
  const int64_t nb = in_ref(a, 1).numel;
  const int64_t n = out_ref(a, 0).numel;
  if (nb == 0 || n == 0) return REMAT_OK;
  bias_add_kernel<<<grid_for(n), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const float*>(a.in[1]),
      static_cast<float*>(a.out[0]), n, nb);
  return check_cuda(a, cudaGetLastError(), "bias_add kernel");
}

remat_status reduce_leading(const KernelArgs& a) {
  const int64_t nb = out_ref(a, 0).numel;
  if (nb == 0) return REMAT_OK;
  const int64_t rows = in_ref(a, 0).numel / nb;
  const dim3 block(32, kColumnRows);
  column_sum_kernel<<<static_cast<unsigned>((nb + 31) / 32), block, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<float*>(a.out[0]), rows, nb);
  return check_cuda(a, cudaGetLastError(), "reduce_leading kernel");
}

remat_status add(const KernelArgs& a) { return launch_binary(a, AddF{}, "add kernel"); }
remat_status mul(const KernelArgs& a) { return launch_binary(a, MulF{}, "mul kernel"); }
remat_status scale(const KernelArgs& a) {
  return launch_unary(a, ScaleF{fattr(a, 0, 1.0f)}, "scale kernel");
}
remat_status relu(const KernelArgs& a) { return launch_unary(a, ReluF{}, "relu kernel"); }
remat_status relu_grad(const KernelArgs& a) {
  return launch_binary(a, ReluGradF{}, "relu_grad kernel");
}
remat_status gelu(const KernelArgs& a) { return launch_unary(a, GeluF{}, "gelu kernel"); }
remat_status gelu_grad(const KernelArgs& a) {
  return launch_binary(a, GeluGradF{}, "gelu_grad kernel");
}
remat_status tanh(const KernelArgs& a) { return launch_unary(a, TanhF{}, "tanh kernel"); }
remat_status tanh_grad(const KernelArgs& a) {
  return launch_binary(a, TanhGradF{}, "tanh_grad kernel");
}
remat_status sigmoid(const KernelArgs& a) {
  return launch_unary(a, SigmoidF{}, "sigmoid kernel");
}
remat_status sigmoid_grad(const KernelArgs& a) {
  return launch_binary(a, SigmoidGradF{}, "sigmoid_grad kernel");
}
remat_status dropout(const KernelArgs& a) { return launch_dropout(a); }
remat_status dropout_grad(const KernelArgs& a) { return launch_dropout(a); }

}  // namespace cuda
}  // namespace remat
