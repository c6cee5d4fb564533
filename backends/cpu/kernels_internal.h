// Private to the CPU kernels: every kernel's entry point and the small helpers they share.
#ifndef REMAT_BACKENDS_CPU_KERNELS_INTERNAL_H_
#define REMAT_BACKENDS_CPU_KERNELS_INTERNAL_H_

#include <stdint.h>

#include "backends/cpu/kernels.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace cpu {

// Kernels mark pointers __restrict: ops.h promises an op never reads and writes the same
// tensor unless it says "in place" (the optimizers, which do not use __restrict).

inline const TensorRef& in_ref(const KernelArgs& a, int i) { return *a.call->inputs[i]; }
inline const TensorRef& out_ref(const KernelArgs& a, int i) { return *a.call->outputs[i]; }
inline const float* in_f32(const KernelArgs& a, int i) {
  return static_cast<const float*>(a.in[i]);
}
inline float* out_f32(const KernelArgs& a, int i) { return static_cast<float*>(a.out[i]); }

// kernels_matmul.cc
remat_status matmul(const KernelArgs& a);

// kernels_elementwise.cc
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

// kernels_norm.cc
remat_status softmax(const KernelArgs& a);
remat_status softmax_grad(const KernelArgs& a);
remat_status layernorm(const KernelArgs& a);
remat_status layernorm_grad(const KernelArgs& a);

// kernels_data.cc
remat_status embedding(const KernelArgs& a);
remat_status embedding_grad(const KernelArgs& a);
remat_status permute(const KernelArgs& a);
remat_status copy(const KernelArgs& a);
remat_status select(const KernelArgs& a);
remat_status select_grad(const KernelArgs& a);

// kernels_loss.cc
remat_status softmax_cross_entropy(const KernelArgs& a);
remat_status softmax_cross_entropy_grad(const KernelArgs& a);
remat_status mse(const KernelArgs& a);
remat_status mse_grad(const KernelArgs& a);

// kernels_optim.cc
remat_status sgd_update(const KernelArgs& a);
remat_status adam_update(const KernelArgs& a);

// kernels_copy.cc
remat_status spill(const KernelArgs& a);
remat_status prefetch(const KernelArgs& a);
remat_status wait(const KernelArgs& a);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_KERNELS_INTERNAL_H_
