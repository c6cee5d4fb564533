// Row-wise CUDA kernels over the last axis: softmax and layer norm, with their gradients.
// One block per row; sums in double with a fixed reduction tree (deterministic).
#include <math.h>

#include "backends/cuda/cuda_common.cuh"

namespace remat {
namespace cuda {
namespace {

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                               int64_t n) {
  __shared__ double shd[kBlock];
  __shared__ float shf[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float mx = xr[0];  // Subtracting the row max keeps expf() finite.
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = xr[j] > mx ? xr[j] : mx;
    mx = block_max(mx, shf);
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += expf(xr[j] - mx);
    sum = block_sum(sum, shd);
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = expf(xr[j] - mx) * inv;
  }
}

__global__ void softmax_grad_kernel(const float* __restrict__ dy, const float* __restrict__ y,
                                    float* __restrict__ dx, int64_t rows, int64_t n) {
  __shared__ double shd[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* dyr = dy + r * n;
    const float* yr = y + r * n;
    double dot = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      dot += static_cast<double>(dyr[j]) * yr[j];
    }
    const float d = static_cast<float>(block_sum(dot, shd));
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) dx[r * n + j] = yr[j] * (dyr[j] - d);
  }
}

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ y,
                                 float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                 int64_t rows, int64_t n, float eps) {
  __shared__ double shd[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * n;
    // Two passes in double, biased variance, as the CPU kernel.
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += xr[j];
    const double mean = block_sum(sum, shd) / static_cast<double>(n);
    double sq = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const double d = xr[j] - mean;
      sq += d * d;
    }
    sq = block_sum(sq, shd);
    const double rstd = 1.0 / sqrt(sq / static_cast<double>(n) + static_cast<double>(eps));
    const float m = static_cast<float>(mean), s = static_cast<float>(rstd);
    if (threadIdx.x == 0) {
      mean_out[r] = m;
      rstd_out[r] = s;
    }
    float* yr = y + r * n;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      yr[j] = (xr[j] - m) * s * gamma[j] + beta[j];
    }
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma, xhat = (x - mean) * rstd.
__global__ void layernorm_dx_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                    const float* __restrict__ mean, const float* __restrict__ rstd,
                                    const float* __restrict__ gamma, float* __restrict__ dx,
                                    int64_t rows, int64_t n) {
  __shared__ double shd[kBlock];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* dyr = dy + r * n;
    const float* xr = x + r * n;
    const float m = mean[r], s = rstd[r];
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float g = dyr[j] * gamma[j];
      sum_g += g;
      sum_gx += static_cast<double>(g) * ((xr[j] - m) * s);
    }
    sum_g = block_sum(sum_g, shd);
    sum_gx = block_sum(sum_gx, shd);
    const float mean_g = static_cast<float>(sum_g / static_cast<double>(n));
    const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(n));
    float* dxr = dx + r * n;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float xhat = (xr[j] - m) * s;
      dxr[j] = s * (dyr[j] * gamma[j] - mean_g - xhat * mean_gx);
    }
  }
}

// dgamma[j] = sum_r dy * xhat, dbeta[j] = sum_r dy: a block owns 32 columns, kColumnRows
// thread rows sum fixed row strides in double, one thread adds the partials in order.
constexpr int kColumnRows = 16;

__global__ void layernorm_dparams_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                         const float* __restrict__ mean,
                                         const float* __restrict__ rstd,
                                         float* __restrict__ dgamma, float* __restrict__ dbeta,
                                         int64_t rows, int64_t n) {
  __shared__ double part_g[kColumnRows][33];
  __shared__ double part_b[kColumnRows][33];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  double acc_g = 0.0, acc_b = 0.0;
  if (col < n) {
    for (int64_t r = threadIdx.y; r < rows; r += kColumnRows) {
      const float d = dy[r * n + col];
      acc_g += d * ((x[r * n + col] - mean[r]) * rstd[r]);
      acc_b += d;
    }
  }
  part_g[threadIdx.y][threadIdx.x] = acc_g;
  part_b[threadIdx.y][threadIdx.x] = acc_b;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    double sg = 0.0, sb = 0.0;
    for (int k = 0; k < kColumnRows; ++k) {
      sg += part_g[k][threadIdx.x];
      sb += part_b[k][threadIdx.x];
    }
    dgamma[col] = static_cast<float>(sg);
    dbeta[col] = static_cast<float>(sb);
  }
}

}  // namespace

remat_status softmax(const KernelArgs& a) {
  const int64_t n = last_dim(in_ref(a, 0));
  const int64_t rows = n > 0 ? in_ref(a, 0).numel / n : 0;
  if (rows == 0) return REMAT_OK;
  softmax_kernel<<<grid_rows(rows), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<float*>(a.out[0]), rows, n);
  return check_cuda(a, cudaGetLastError(), "softmax kernel");
}

remat_status softmax_grad(const KernelArgs& a) {
  const int64_t n = last_dim(in_ref(a, 0));
  const int64_t rows = n > 0 ? in_ref(a, 0).numel / n : 0;
  if (rows == 0) return REMAT_OK;
  softmax_grad_kernel<<<grid_rows(rows), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const float*>(a.in[1]),
      static_cast<float*>(a.out[0]), rows, n);
  return check_cuda(a, cudaGetLastError(), "softmax_grad kernel");
}

remat_status layernorm(const KernelArgs& a) {
  const int64_t n = last_dim(in_ref(a, 0));
  const int64_t rows = n > 0 ? in_ref(a, 0).numel / n : 0;
  if (rows == 0) return REMAT_OK;
  layernorm_kernel<<<grid_rows(rows), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const float*>(a.in[1]),
      static_cast<const float*>(a.in[2]), static_cast<float*>(a.out[0]),
      static_cast<float*>(a.out[1]), static_cast<float*>(a.out[2]), rows, n,
      fattr(a, 0, 1e-5f));
  return check_cuda(a, cudaGetLastError(), "layernorm kernel");
}

remat_status layernorm_grad(const KernelArgs& a) {
  const int64_t n = last_dim(in_ref(a, 1));
  const int64_t rows = n > 0 ? in_ref(a, 1).numel / n : 0;
  if (n == 0) return REMAT_OK;
  const float* dy = static_cast<const float*>(a.in[0]);
  const float* x = static_cast<const float*>(a.in[1]);
  const float* mean = static_cast<const float*>(a.in[2]);
  const float* rstd = static_cast<const float*>(a.in[3]);
  if (rows > 0) {
    layernorm_dx_kernel<<<grid_rows(rows), kBlock, 0, a.stream>>>(
        dy, x, mean, rstd, static_cast<const float*>(a.in[4]), static_cast<float*>(a.out[0]),
        rows, n);
    const remat_status status = check_cuda(a, cudaGetLastError(), "layernorm_grad dx kernel");
    if (status != REMAT_OK) return status;
  }
  const dim3 block(32, kColumnRows);
  layernorm_dparams_kernel<<<static_cast<unsigned>((n + 31) / 32), block, 0, a.stream>>>(
      dy, x, mean, rstd, static_cast<float*>(a.out[1]), static_cast<float*>(a.out[2]), rows, n);
  return check_cuda(a, cudaGetLastError(), "layernorm_grad dgamma/dbeta kernel");
}

}  // namespace cuda
}  // namespace remat
