// Loss CUDA kernels: mean softmax cross-entropy and mean squared error, with their gradients.
// The means are two-pass reductions: fixed per-block partials in KernelArgs::partials, then one
// block sums them in a fixed order, so the loss bits depend only on the shapes.
#include <math.h>

#include "backends/cuda/cuda_common.cuh"

namespace remat {
namespace cuda {
namespace {

// Blocks of the first pass for |work| items: a pure function of the shape.
unsigned partial_blocks(int64_t work) {
  return static_cast<unsigned>(work < 1 ? 1 : (work > kMaxPartials ? kMaxPartials : work));
}

// Block b handles rows b, b + gridDim.x, ... in order and writes sum of their terms
// (x[label] - max - log(sum exp(x - max))) to partials[b]; probs are written on the way.
__global__ void cross_entropy_rows_kernel(const float* __restrict__ logits,
                                          const int32_t* __restrict__ labels,
                                          float* __restrict__ probs, double* __restrict__ partials,
                                          int64_t rows, int64_t c, DeviceState* state,
                                          uint32_t op_index, uint32_t op_code) {
  __shared__ double shd[kBlock];
  __shared__ float shf[kBlock];
  double block_total = 0.0;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = logits + r * c;
    float* p = probs + r * c;
    float mx = x[0];
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) mx = x[j] > mx ? x[j] : mx;
    mx = block_max(mx, shf);
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) sum += expf(x[j] - mx);
    sum = block_sum(sum, shd);
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) p[j] = expf(x[j] - mx) * inv;
    const int32_t label = labels[r];
    if (label < 0 || label >= c) {
      if (threadIdx.x == 0) report_error(state, op_index, op_code, label, r, c);
    } else {
      block_total += static_cast<double>(x[label]) - mx - log(sum);
    }
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = block_total;
}

// Sum of |count| partials in a fixed order; out[0] = sum / divisor.
__global__ void sum_partials_kernel(const double* __restrict__ partials, int count,
                                    double divisor, float* __restrict__ out) {
  __shared__ double shd[kBlock];
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  acc = block_sum(acc, shd);
  if (threadIdx.x == 0) out[0] = static_cast<float>(acc / divisor);
}

__global__ void cross_entropy_grad_kernel(const float* __restrict__ probs,
                                          const int32_t* __restrict__ labels,
                                          float* __restrict__ dlogits, int64_t rows, int64_t c,
                                          float inv_n, DeviceState* state, uint32_t op_index,
                                          uint32_t op_code) {
  const int64_t n = rows * c;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const int64_t r = i / c, j = i - r * c;
    const int32_t label = labels[r];
    if (label < 0 || label >= c) {
      if (j == 0) report_error(state, op_index, op_code, label, r, c);
      dlogits[i] = 0.0f;
      continue;
    }
    dlogits[i] = j == label ? (probs[i] - 1.0f) * inv_n : probs[i] * inv_n;
  }
}

// Block b sums (pred - target)^2 over a fixed grid-stride set of elements into partials[b].
__global__ void squared_error_kernel(const float* __restrict__ pred,
                                     const float* __restrict__ target,
                                     double* __restrict__ partials, int64_t n) {
  __shared__ double shd[kBlock];
  double acc = 0.0;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const double d = static_cast<double>(pred[i]) - target[i];
    acc += d * d;
  }
  acc = block_sum(acc, shd);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void mse_grad_kernel(const float* __restrict__ pred, const float* __restrict__ target,
                                float* __restrict__ dpred, int64_t n, float k) {
  for (int64_t i = global_index(); i < n; i += global_stride()) dpred[i] = k * (pred[i] - target[i]);
}

}  // namespace

remat_status softmax_cross_entropy(const KernelArgs& a) {
  const int64_t c = last_dim(in_ref(a, 0));
  const int64_t rows = c > 0 ? in_ref(a, 0).numel / c : 0;
  float* loss = static_cast<float*>(a.out[0]);
  if (rows == 0) return check_cuda(a, cudaMemsetAsync(loss, 0, sizeof(float), a.stream), "memset");
  const unsigned blocks = partial_blocks(rows);
  cross_entropy_rows_kernel<<<blocks, kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const int32_t*>(a.in[1]),
      static_cast<float*>(a.out[1]), a.partials, rows, c, a.state, a.call->index, a.call->code);
  remat_status status = check_cuda(a, cudaGetLastError(), "softmax_cross_entropy kernel");
  if (status != REMAT_OK) return status;
  // loss = -(sum of the terms) / N; dividing by -N is the same rounding as negating first.
  sum_partials_kernel<<<1, kBlock, 0, a.stream>>>(a.partials, static_cast<int>(blocks),
                                                  -static_cast<double>(rows), loss);
  return check_cuda(a, cudaGetLastError(), "softmax_cross_entropy sum kernel");
}

remat_status softmax_cross_entropy_grad(const KernelArgs& a) {
  const int64_t c = last_dim(in_ref(a, 0));
  const int64_t rows = c > 0 ? in_ref(a, 0).numel / c : 0;
  if (rows == 0) return REMAT_OK;
  const float inv_n = static_cast<float>(1.0 / static_cast<double>(rows));
  cross_entropy_grad_kernel<<<grid_for(rows * c), kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const int32_t*>(a.in[1]),
      static_cast<float*>(a.out[0]), rows, c, inv_n, a.state, a.call->index, a.call->code);
  return check_cuda(a, cudaGetLastError(), "softmax_cross_entropy_grad kernel");
}

remat_status mse(const KernelArgs& a) {
  const int64_t n = in_ref(a, 0).numel;
  float* loss = static_cast<float*>(a.out[0]);
  if (n == 0) return check_cuda(a, cudaMemsetAsync(loss, 0, sizeof(float), a.stream), "memset");
  const unsigned blocks = partial_blocks((n + kBlock - 1) / kBlock);
  squared_error_kernel<<<blocks, kBlock, 0, a.stream>>>(static_cast<const float*>(a.in[0]),
                                                        static_cast<const float*>(a.in[1]),
                                                        a.partials, n);
  remat_status status = check_cuda(a, cudaGetLastError(), "mse kernel");
  if (status != REMAT_OK) return status;
  sum_partials_kernel<<<1, kBlock, 0, a.stream>>>(a.partials, static_cast<int>(blocks),
                                                  static_cast<double>(n), loss);
  return check_cuda(a, cudaGetLastError(), "mse sum kernel");
}

remat_status mse_grad(const KernelArgs& a) {
  const int64_t n = in_ref(a, 0).numel;
  if (n == 0) return REMAT_OK;
  const float k = static_cast<float>(2.0 / static_cast<double>(n));
  mse_grad_kernel<<<grid_for(n), kBlock, 0, a.stream>>>(static_cast<const float*>(a.in[0]),
                                                        static_cast<const float*>(a.in[1]),
                                                        static_cast<float*>(a.out[0]), n, k);
  return check_cuda(a, cudaGetLastError(), "mse_grad kernel");
}

}  // namespace cuda
}  // namespace remat
