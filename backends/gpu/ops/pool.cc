// Pooling on the GPU backends (kernels/pool.cl): max and average pooling and their gradients,
// global average pooling and its gradient. Forward kernels run one work item per output
// element, the windowed gradients one per input element.
#include <initializer_list>

#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace gpu {
namespace {

size_t items(int64_t v) { return static_cast<size_t>(v); }

// Launches windowed pooling kernel |id| of |call| over |tensors| (the kernel's tensor
// arguments, the op's output last), one work item per element of that output: |x| is the
// unpooled tensor (x, or dx for avg_pool_grad), |y| the pooled one (y or dy).
remat_status run_pool(Launcher& l, const OpCall& call, KernelId id, const TensorRef& x,
                      const TensorRef& y, std::initializer_list<const TensorRef*> tensors,
                      ErrorBuffer* err) {
  const bool average = id == kKernel_avg_pool || id == kKernel_avg_pool_grad;
  const PoolAttrs pa = pool_attrs(call.iattrs, call.num_iattrs, average);
  const Nchw in = nchw_of(x.dims, x.rank), out = nchw_of(y.dims, y.rank);
  Args a(l, id);
  for (const TensorRef* t : tensors) a.tensor(*t);
  a.u64(in.n * in.c).u64(in.h).u64(in.w).u64(out.h).u64(out.w);
  a.u64(pa.kernel_h).u64(pa.kernel_w).u64(pa.stride_h).u64(pa.stride_w).u64(pa.pad_h).u64(pa.pad_w);
  a.u64(pa.dilation_h).u64(pa.dilation_w);
  a.i32(pa.count_include_pad ? 1 : 0);
  return a.launch(items(tensors.end()[-1]->numel), call, err);
}

// The [N, C, ...] tensor |t| as N * C planes of |size| elements.
struct Planes {
  int64_t planes, size;
};
Planes planes_of(const TensorRef& t) {
  const int64_t planes = t.dims[0] * t.dims[1];
  return {planes, planes > 0 ? t.numel / planes : 0};
}

}  // namespace

remat_status max_pool(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const TensorRef& y = *call.outputs[0];
  return run_pool(l, call, kKernel_max_pool, x, y, {&x, &y}, err);
}

remat_status max_pool_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& dy = *call.inputs[0];
  const TensorRef& x = *call.inputs[1];
  const TensorRef& dx = *call.outputs[0];
  return run_pool(l, call, kKernel_max_pool_grad, x, dy, {&dy, &x, &dx}, err);
}

remat_status avg_pool(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const TensorRef& y = *call.outputs[0];
  return run_pool(l, call, kKernel_avg_pool, x, y, {&x, &y}, err);
}

remat_status avg_pool_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& dy = *call.inputs[0];
  const TensorRef& dx = *call.outputs[0];
  return run_pool(l, call, kKernel_avg_pool_grad, dx, dy, {&dy, &dx}, err);
}

remat_status global_avg_pool(Launcher& l, const OpCall& call, const StepContext&,
                             ErrorBuffer* err) {
  const Planes p = planes_of(*call.inputs[0]);
  Args a(l, kKernel_global_avg_pool);
  a.tensor(*call.inputs[0]).tensor(*call.outputs[0]).u64(p.planes).u64(p.size);
  return a.launch(items(p.planes), call, err);
}

remat_status global_avg_pool_grad(Launcher& l, const OpCall& call, const StepContext&,
                                  ErrorBuffer* err) {
  const TensorRef& dx = *call.outputs[0];
  const Planes p = planes_of(dx);
  Args a(l, kKernel_global_avg_pool_grad);
  a.tensor(*call.inputs[0]).tensor(dx).u64(p.planes).u64(p.size);
  return a.launch(items(dx.numel), call, err);
}

}  // namespace gpu
}  // namespace remat
