// Every op's attributes by name, generated from the op catalogue (plan/op_catalogue.h):
// attr::OP::NAME is the attribute's index in the op's int or float list and the value an
// absent one takes, so no code counts positions or restates a default.
//
//   fattr(call, attr::leaky_relu::alpha)       a backend reads one (backends/shared/op_args.h)
//   op.attr(attr::conv::groups)                the verifier and the compiler read one
//   named({{attr::select::axis, 1}})           the compiler writes a list
//
// Constant-initialised and header-only: no heap, no static constructors, no exceptions.
#ifndef REMAT_PLAN_OP_ATTRS_H_
#define REMAT_PLAN_OP_ATTRS_H_

#include <stdint.h>

#include "plan/op_attr_list.h"
#include "plan/op_catalogue.h"
#include "plan/ops.h"

namespace remat {

/// An int64 attribute of one op: where it is in the op's int list, and its catalogue default.
struct IntAttr {
  uint32_t index;    ///< Position in the op's int attributes.
  int64_t fallback;  ///< The value a kernel takes when a caller leaves it out.
};

/// A float32 attribute of one op: where it is in the op's float list, and its default.
struct FloatAttr {
  uint32_t index;  ///< Position in the op's float attributes.
  float fallback;  ///< The value a kernel takes when a caller leaves it out.
};

/// One namespace per op (its snake name), one constant per named attribute.
namespace attr {

#define REMAT_ATTR_INT_(index, pair) \
  constexpr IntAttr REMAT_ATTR_LIST_NAME(pair){index, REMAT_ATTR_LIST_DEFAULT(pair)};
#define REMAT_ATTR_FLOAT_(index, pair) \
  constexpr FloatAttr REMAT_ATTR_LIST_NAME(pair){index, REMAT_ATTR_LIST_DEFAULT(pair)};
// The catalogue's attribute arguments, pasted onto these names: REMAT_ATTRS(...) or
// REMAT_ATTRS_VARIABLE (permute's list, laid out by its values: attr::permute below).
#define REMAT_ATTR_INTS_REMAT_ATTRS(...) REMAT_ATTR_LIST_FOR_EACH(REMAT_ATTR_INT_, __VA_ARGS__)
#define REMAT_ATTR_INTS_REMAT_ATTRS_VARIABLE
#define REMAT_ATTR_FLOATS_REMAT_ATTRS(...) REMAT_ATTR_LIST_FOR_EACH(REMAT_ATTR_FLOAT_, __VA_ARGS__)
#define REMAT_ATTR_OP_(Name, snake, code, in, out, iattrs, fattrs, dtypes, rule) \
  namespace snake {                                                              \
  REMAT_ATTR_INTS_##iattrs REMAT_ATTR_FLOATS_##fattrs                            \
  }
REMAT_OP_CATALOGUE(REMAT_ATTR_OP_)
#undef REMAT_ATTR_OP_
#undef REMAT_ATTR_FLOATS_REMAT_ATTRS
#undef REMAT_ATTR_INTS_REMAT_ATTRS_VARIABLE
#undef REMAT_ATTR_INTS_REMAT_ATTRS
#undef REMAT_ATTR_FLOAT_
#undef REMAT_ATTR_INT_

// permute's int attributes are laid out by their values (REMAT_ATTRS_VARIABLE): the rank r,
// then the dims d_0..d_{r-1}, then the permutation p_0..p_{r-1}.
namespace permute {
constexpr IntAttr rank{0, 0};
/// Index of d_k.
constexpr uint32_t dim(int64_t k) { return static_cast<uint32_t>(1 + k); }
/// Index of p_k of a permute of rank |r|.
constexpr uint32_t perm(int64_t r, int64_t k) { return static_cast<uint32_t>(1 + r + k); }
}  // namespace permute

}  // namespace attr

/// The learning rate of optimizer update |code| (attr::sgd_update::lr, attr::adam_update::lr),
/// or nullptr when |code| is not an optimizer update: what the runtime sets between steps.
inline const FloatAttr* optimizer_lr(uint16_t code) {
  if (code == static_cast<uint16_t>(OpCode::kSgdUpdate)) return &attr::sgd_update::lr;
  if (code == static_cast<uint16_t>(OpCode::kAdamUpdate)) return &attr::adam_update::lr;
  return nullptr;
}

}  // namespace remat

#endif  // REMAT_PLAN_OP_ATTRS_H_
