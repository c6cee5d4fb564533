// Private to the CUDA backend: what every kernel launcher gets, and the launchers by op family.
//
// Shared by host C++ (g++) and the .cu files (nvcc); nothing here is device code.
#ifndef REMAT_BACKENDS_CUDA_CUDA_KERNELS_H_
#define REMAT_BACKENDS_CUDA_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "runtime/backend.h"

namespace remat {
namespace cuda {

/// Device-resident values that change per step or per run, read by kernels through a pointer.
/// Kernels never take the step context by value: a captured CUDA graph replays the same
/// launch arguments every step, so anything that changes with the step lives here and is
/// written (outside the graph) before each step.
struct DeviceState {
  uint64_t seed;            ///< StepContext::seed of the running step.
  uint64_t step;            ///< StepContext::step of the running step.
  int32_t error;            ///< 0, or 1 once a kernel found bad data (first report wins).
  uint32_t error_op;        ///< OpCall::index of the op that found it.
  uint32_t error_code;      ///< Its OpCode.
  int32_t error_value;      ///< The bad id or label.
  int64_t error_position;   ///< Where in the ids / labels tensor.
  int64_t error_limit;      ///< The range it had to be in: [0, limit).
};

/// Doubles of device scratch for the first pass of two-pass deterministic reductions (loss
/// sums): one partial per block, summed in a fixed order by a second one-block kernel.
constexpr int kMaxPartials = 1024;

/// Everything a launcher needs: the op, device addresses of its tensors, the stream.
struct KernelArgs {
  const OpCall* call;            ///< The op; shapes are verified before any op runs.
  void* in[kMaxOpInputs];        ///< Device address of each input.
  void* out[kMaxOpOutputs];      ///< Device address of each output.
  cudaStream_t stream;           ///< The compute stream (possibly being captured).
  DeviceState* state;            ///< Device state (seed, step, error report).
  double* partials;              ///< kMaxPartials doubles of device scratch.
  ErrorBuffer* err;              ///< Where a launch failure or bad attribute is described.
};

/// A launcher: enqueues the op's kernels on |stream| and returns without waiting.
using Kernel = remat_status (*)(const KernelArgs& args);

/// The launcher of |code|, or nullptr for ops the backend runs itself (matmul, spill,
/// prefetch, wait) and for unknown codes.
Kernel kernel_for(uint16_t code);

// Attribute access as on the CPU: the verifier counted them; the fallbacks keep a direct
// caller (a test) that leaves an optional one out well-defined.
inline int64_t iattr(const KernelArgs& a, uint32_t i, int64_t fallback) {
  return (a.call->iattrs != nullptr && i < a.call->num_iattrs) ? a.call->iattrs[i] : fallback;
}
inline float fattr(const KernelArgs& a, uint32_t i, float fallback) {
  return (a.call->fattrs != nullptr && i < a.call->num_fattrs) ? a.call->fattrs[i] : fallback;
}
inline const TensorRef& in_ref(const KernelArgs& a, int i) { return *a.call->inputs[i]; }
inline const TensorRef& out_ref(const KernelArgs& a, int i) { return *a.call->outputs[i]; }
inline int64_t last_dim(const TensorRef& t) { return t.rank == 0 ? 1 : t.dims[t.rank - 1]; }
inline int64_t elem_bytes(const TensorRef& t) {
  return t.numel > 0 ? static_cast<int64_t>(t.bytes) / t.numel : 4;
}

/// Returns REMAT_OK, or REMAT_ERROR_INTERNAL naming the op and the CUDA error of the last
/// launch or async call (|what| says which).
remat_status check_cuda(const KernelArgs& a, cudaError_t status, const char* what);

// kernels_state.cu: enqueues state->seed = seed, state->step = step on |stream|.
cudaError_t launch_set_step(cudaStream_t stream, DeviceState* state, uint64_t seed,
                            uint64_t step);

// kernels_elementwise.cu
remat_status bias_add(const KernelArgs& a);
remat_status reduce_leading(const KernelArgs& a);
remat_status add(const KernelArgs& a);
remat_status mul(const KernelArgs& a);
remat_status scale(const KernelArgs& a);
remat_status relu(const KernelArgs& a);
remat_status relu_grad(const KernelArgs& a);
remat_status gelu(const KernelArgs& a);
remat_status gelu_grad(const KernelArgs& a);
remat_status tanh(const KernelArgs& a);
remat_status tanh_grad(const KernelArgs& a);
remat_status sigmoid(const KernelArgs& a);
remat_status sigmoid_grad(const KernelArgs& a);
remat_status dropout(const KernelArgs& a);
remat_status dropout_grad(const KernelArgs& a);

// kernels_norm.cu
remat_status softmax(const KernelArgs& a);
remat_status softmax_grad(const KernelArgs& a);
remat_status layernorm(const KernelArgs& a);
remat_status layernorm_grad(const KernelArgs& a);

// kernels_data.cu
remat_status embedding(const KernelArgs& a);
remat_status embedding_grad(const KernelArgs& a);
remat_status permute(const KernelArgs& a);
remat_status copy(const KernelArgs& a);
remat_status select(const KernelArgs& a);
remat_status select_grad(const KernelArgs& a);

// kernels_loss.cu
remat_status softmax_cross_entropy(const KernelArgs& a);
remat_status softmax_cross_entropy_grad(const KernelArgs& a);
remat_status mse(const KernelArgs& a);
remat_status mse_grad(const KernelArgs& a);

// kernels_optim.cu
remat_status sgd_update(const KernelArgs& a);
remat_status adam_update(const KernelArgs& a);

}  // namespace cuda
}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUDA_KERNELS_H_
