// The CPU backend's dispatch table: every op of the catalogue to its kernel, cpu::<snake>; and
// the scratch the kernels share.
#include "backends/cpu/kernels.h"
#include "backends/cpu/conv/winograd.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"
#include "backends/shared/op_table.h"
#include "plan/op_subset.h"

namespace remat {
namespace cpu {
namespace {

// The CPU backend implements every op: a catalogue entry without a kernel does not compile. A
// firmware build's table holds its plan's ops alone (plan/op_subset.h).
constexpr OpTable<Kernel> make_table() {
  OpTable<Kernel> t{};
#define REMAT_CPU_KERNEL(Name, snake, code, ...) t.fn[code] = op_in_build(code) ? snake : nullptr;
  REMAT_OP_CATALOGUE(REMAT_CPU_KERNEL)
#undef REMAT_CPU_KERNEL
  return t;
}

constexpr OpTable<Kernel> kTable = make_table();

}  // namespace

Kernel kernel_for(uint16_t code) { return kTable.find(code); }

size_t scratch_bytes(uint32_t threads) {
  return (static_cast<size_t>(threads > 0 ? threads : 1) * kGemmPackFloats +
          kWinogradFilterFloats) *
         sizeof(float);
}

size_t strip_bytes(uint32_t threads) {
  return static_cast<size_t>(threads > 0 ? threads : 1) * kProductStripFloats * sizeof(float);
}

}  // namespace cpu
}  // namespace remat
