// Device helpers shared by the CUDA kernel files: launch shapes, block reductions, the
// Philox port and the data-error report. Included by .cu files only.
#ifndef REMAT_BACKENDS_CUDA_CUDA_COMMON_CUH_
#define REMAT_BACKENDS_CUDA_CUDA_COMMON_CUH_

#include <stdint.h>

#include "backends/cuda/cuda_kernels.h"

namespace remat {
namespace cuda {

/// Threads per block of the 1-D kernels. Block reductions assume a power of two.
constexpr int kBlock = 256;

/// Blocks for a grid-stride loop over |n| items: enough to fill any current GPU, capped so
/// that huge tensors loop instead of launching millions of blocks.
inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 8192 ? 8192 : blocks));
}

/// Blocks for a one-block-per-row loop over |rows| rows (rows beyond it loop).
inline unsigned grid_rows(int64_t rows) {
  return static_cast<unsigned>(rows < 1 ? 1 : (rows > 65535 ? 65535 : rows));
}

__device__ inline int64_t global_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t global_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

/// Sum over the block in a fixed tree order (deterministic), using |sh| (blockDim.x entries).
/// Every thread gets the result.
template <typename T>
__device__ T block_sum(T v, T* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  const T r = sh[0];
  __syncthreads();
  return r;
}

/// Maximum over the block, with the CPU kernels' comparison (a > b ? a : b).
__device__ inline float block_max(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float o = sh[threadIdx.x + s];
      sh[threadIdx.x] = o > sh[threadIdx.x] ? o : sh[threadIdx.x];
    }
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

/// Records a data error (bad id or label); the first report of a step wins. Integer atomics
/// only; the host reads the report after the step.
__device__ inline void report_error(DeviceState* s, uint32_t op, uint32_t code, int32_t value,
                                    int64_t position, int64_t limit) {
  if (atomicCAS(&s->error, 0, 1) == 0) {
    s->error_op = op;
    s->error_code = code;
    s->error_value = value;
    s->error_position = position;
    s->error_limit = limit;
  }
}

/// plan/philox.h's philox4x32, word for word, for host and device: the dropout mask on the
/// GPU has the same bits as on the CPU.
struct DevPhilox4 {
  uint32_t v[4];
};

__host__ __device__ inline DevPhilox4 dev_philox4x32(uint32_t c0, uint32_t c1, uint32_t c2,
                                                     uint32_t c3, uint32_t k0, uint32_t k1) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  DevPhilox4 r;
  r.v[0] = c0;
  r.v[1] = c1;
  r.v[2] = c2;
  r.v[3] = c3;
  return r;
}

/// plan/philox.h's uniform01.
__host__ __device__ inline float dev_uniform01(uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

}  // namespace cuda
}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUDA_COMMON_CUH_
