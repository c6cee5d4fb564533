// Host spill traffic on the CPU backend: arena and host region share memory, so copies are
// plain memcpy that complete before the op returns, and wait has nothing to wait for.
#include <string.h>

#include "backends/cpu/kernels_internal.h"

namespace remat {
namespace cpu {

remat_status spill(const KernelArgs& args) {
  memcpy(args.out[0], args.in[0], static_cast<size_t>(out_ref(args, 0).bytes));
  return REMAT_OK;
}

remat_status prefetch(const KernelArgs& args) {
  memcpy(args.out[0], args.in[0], static_cast<size_t>(out_ref(args, 0).bytes));
  return REMAT_OK;
}

remat_status wait(const KernelArgs&) { return REMAT_OK; }

}  // namespace cpu
}  // namespace remat
