// Fused attention (plan/op_catalogue.h: attention, attention_grad). Not yet implemented: the
// kernels land with their tests.
#include "backends/cpu/kernels_internal.h"

namespace remat {
namespace cpu {

remat_status attention(const KernelArgs& args) {
  return set_error(args.err, REMAT_ERROR_UNIMPLEMENTED, "op %u (attention): not implemented",
                   args.call->index);
}

remat_status attention_grad(const KernelArgs& args) {
  return set_error(args.err, REMAT_ERROR_UNIMPLEMENTED, "op %u (attention_grad): not implemented",
                   args.call->index);
}

}  // namespace cpu
}  // namespace remat
