// Private to the CPU kernels: every kernel's entry point and the small accessors they share.
#ifndef REMAT_BACKENDS_CPU_KERNELS_INTERNAL_H_
#define REMAT_BACKENDS_CPU_KERNELS_INTERNAL_H_

#include <stdint.h>

#include "backends/cpu/kernels.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace cpu {

// Kernels mark pointers __restrict: the op catalogue promises an op never reads and writes the same
// tensor unless it says "in place" (the optimizers, which do not use __restrict).

inline const TensorRef& in_ref(const KernelArgs& a, int i) { return *a.call->inputs[i]; }
inline const TensorRef& out_ref(const KernelArgs& a, int i) { return *a.call->outputs[i]; }
inline const float* in_f32(const KernelArgs& a, int i) {
  return static_cast<const float*>(a.in[i]);
}
inline float* out_f32(const KernelArgs& a, int i) { return static_cast<float*>(a.out[i]); }

// Every op's kernel, one per catalogue entry, named by the op (kernels_<family>.cc); the
// dispatch table (kernel_table.cc) holds them.
#define REMAT_CPU_KERNEL_DECLARE(Name, snake, ...) remat_status snake(const KernelArgs& a);
REMAT_OP_CATALOGUE(REMAT_CPU_KERNEL_DECLARE)
#undef REMAT_CPU_KERNEL_DECLARE

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_KERNELS_INTERNAL_H_
