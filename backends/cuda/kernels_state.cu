// The per-step device state: written by a one-thread kernel on the compute stream, so that it
// is ordered with the step's kernels and stays outside a captured graph.
#include "backends/cuda/cuda_common.cuh"

namespace remat {
namespace cuda {
namespace {

__global__ void set_step_kernel(DeviceState* state, uint64_t seed, uint64_t step) {
  state->seed = seed;
  state->step = step;
}

}  // namespace

cudaError_t launch_set_step(cudaStream_t stream, DeviceState* state, uint64_t seed,
                            uint64_t step) {
  set_step_kernel<<<1, 1, 0, stream>>>(state, seed, step);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace remat
