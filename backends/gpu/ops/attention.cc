// Fused attention on the GPU backends (plan/op_catalogue.h: attention, attention_grad). Not yet
// implemented: the kernels land with their tests.
#include "backends/gpu/ops/ops.h"

namespace remat {
namespace gpu {

remat_status attention(Launcher&, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return set_error(err, REMAT_ERROR_UNIMPLEMENTED, "op %u (attention): not implemented",
                   call.index);
}

remat_status attention_grad(Launcher&, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return set_error(err, REMAT_ERROR_UNIMPLEMENTED, "op %u (attention_grad): not implemented",
                   call.index);
}

}  // namespace gpu
}  // namespace remat
