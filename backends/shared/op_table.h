// A backend's dispatch table: one entry per opcode, filled from the op catalogue.
//
// Every backend resolves ops the same way: it builds an OpTable of its kernel type with
// REMAT_OP_CATALOGUE (plan/op_catalogue.h), naming each op's kernel by the op's snake name, so
// an op added to the catalogue without a kernel in a backend that implements every op fails to
// compile there, and supports_op() is "the table has an entry".
//
//   constexpr OpTable<Kernel> make_table() {
//     OpTable<Kernel> t{};
//   #define ENTRY(Name, snake, code, ...) t.fn[code] = snake;
//     REMAT_OP_CATALOGUE(ENTRY)
//   #undef ENTRY
//     return t;
//   }
//
// A backend that implements only some ops sets those entries one by one.
#ifndef REMAT_BACKENDS_SHARED_OP_TABLE_H_
#define REMAT_BACKENDS_SHARED_OP_TABLE_H_

#include <stdint.h>

#include "plan/ops.h"

namespace remat {

/// Kernels of type |Kernel| (a function pointer) indexed by opcode; entry 0 and ops the backend
/// does not implement are null.
template <typename Kernel>
struct OpTable {
  Kernel fn[kOpCodeCount];

  /// The kernel of |code|, or null when |code| is not an opcode or has no kernel here.
  constexpr Kernel find(uint16_t code) const { return code < kOpCodeCount ? fn[code] : nullptr; }
};

}  // namespace remat

#endif  // REMAT_BACKENDS_SHARED_OP_TABLE_H_
