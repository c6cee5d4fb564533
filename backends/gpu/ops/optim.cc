// Optimizer ops on the GPU backends: SGD with momentum, Adam / AdamW (kernels/optim.cl).
#include <math.h>

#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace gpu {

remat_status finite_check(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  remat_status status = l.begin_check(call, err);
  if (status != REMAT_OK) return status;
  Args a(l, kKernel_finite_check);
  a.tensor(x).u64(static_cast<uint64_t>(x.numel)).state().op(call);
  status = a.launch(static_cast<size_t>(x.numel), call, err);
  // report_value reads the element's 32 bits as an i32: report_error shows them as a float.
  return status == REMAT_OK ? finish_check(l, call, x, err) : status;
}

remat_status sgd_update(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const float momentum = fattr(call, attr::sgd_update::momentum);
  const bool has_velocity = momentum != 0.0f;
  if (has_velocity && (call.num_inputs < 3 || call.num_outputs < 2)) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (sgd_update): momentum %g needs a velocity tensor", call.index,
                     static_cast<double>(momentum));
  }
  const TensorRef& param = *call.inputs[0];
  const TensorRef& param_out = *call.outputs[0];
  // Without momentum the velocity arguments are never read: the param stands in for them.
  const TensorRef& vel = has_velocity ? *call.inputs[2] : param;
  const TensorRef& vel_out = has_velocity ? *call.outputs[1] : param_out;
  Args a(l, kKernel_sgd_update);
  a.tensor(param).tensor(*call.inputs[1]).tensor(vel).tensor(param_out).tensor(vel_out);
  a.u64(param_out.numel).f32(fattr(call, attr::sgd_update::lr)).f32(momentum);
  a.f32(fattr(call, attr::sgd_update::weight_decay));
  a.i32(has_velocity ? 1 : 0).state();
  return a.launch(static_cast<size_t>(param_out.numel), call, err);
}

remat_status adam_update(Launcher& l, const OpCall& call, const StepContext& ctx,
                         ErrorBuffer* err) {
  const float lr = fattr(call, attr::adam_update::lr);
  const float b1 = fattr(call, attr::adam_update::b1);
  const float b2 = fattr(call, attr::adam_update::b2);
  const float eps = fattr(call, attr::adam_update::eps);
  const float wd = fattr(call, attr::adam_update::weight_decay);
  const bool decoupled = iattr(call, attr::adam_update::decoupled) != 0;
  // The same double-precision scalars as the CPU kernel, rounded once. A backend whose
  // launches are replayed (CUDA graphs) works the step's two out again on the device.
  const double t = static_cast<double>(ctx.step) + 1.0;
  const double bias1 = 1.0 - pow(static_cast<double>(b1), t);
  const double bias2 = 1.0 - pow(static_cast<double>(b2), t);
  const TensorRef& param_out = *call.outputs[0];
  Args a(l, kKernel_adam_update);
  for (int i = 0; i < 4; ++i) a.tensor(*call.inputs[i]);
  for (int i = 0; i < 3; ++i) a.tensor(*call.outputs[i]);
  a.u64(param_out.numel).f32(b1).f32(b2).f32(eps).f32(wd).i32(decoupled ? 1 : 0);
  a.f32(static_cast<float>(static_cast<double>(lr) / bias1))
      .f32(static_cast<float>(sqrt(bias2)))
      .f32(static_cast<float>(1.0 - static_cast<double>(b1)))
      .f32(static_cast<float>(1.0 - static_cast<double>(b2)))
      .f32(static_cast<float>(1.0 - static_cast<double>(lr) * wd))
      .f32(lr)
      .state();
  return a.launch(static_cast<size_t>(param_out.numel), call, err);
}

}  // namespace gpu
}  // namespace remat
