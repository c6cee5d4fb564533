// What every backend's host code reads from an op: attributes, row and matrix sizes, the views
// of select and of the reductions over axes. Written once for the CPU, OpenCL and CUDA backends
// (and any new one).
#ifndef REMAT_BACKENDS_SHARED_OP_ARGS_H_
#define REMAT_BACKENDS_SHARED_OP_ARGS_H_

#include <stdint.h>

#include "plan/head_matmul_shape.h"
#include "plan/matmul_shape.h"
#include "plan/op_attrs.h"
#include "runtime/backend.h"

namespace remat {

// Attributes are named by the catalogue (plan/op_attrs.h) and counted by the verifier before
// any op runs; the catalogue's defaults only keep a kernel well-defined when a caller outside
// the runtime (a test) leaves an optional one out.

/// Int attribute |a| of |call| (attr::OP::NAME), or its default when |call| has none.
inline int64_t iattr(const OpCall& call, IntAttr a) {
  return (call.iattrs != nullptr && a.index < call.num_iattrs) ? call.iattrs[a.index] : a.fallback;
}

/// Float attribute |a| of |call| (attr::OP::NAME), or its default when |call| has none.
inline float fattr(const OpCall& call, FloatAttr a) {
  return (call.fattrs != nullptr && a.index < call.num_fattrs) ? call.fattrs[a.index] : a.fallback;
}

// Ops whose kernels share code read a pair's attributes by one op's names (head_matmul's GEMM
// by matmul's, dropout_grad by dropout's, ...): the catalogue must keep them alike.
#define REMAT_SAME_ATTR(a, b, name)                                   \
  static_assert(attr::a::name.index == attr::b::name.index &&         \
                    attr::a::name.fallback == attr::b::name.fallback, \
                #b "'s " #name " must be " #a "'s")
REMAT_SAME_ATTR(matmul, head_matmul, alpha);
REMAT_SAME_ATTR(dropout, dropout_grad, key);
REMAT_SAME_ATTR(dropout, dropout_grad, p);
REMAT_SAME_ATTR(select, select_grad, axis);
REMAT_SAME_ATTR(select, select_grad, index);
REMAT_SAME_ATTR(reduce_sum, broadcast, axis);
REMAT_SAME_ATTR(reduce_sum, broadcast, count);
REMAT_SAME_ATTR(reduce_sum, broadcast, mean);
REMAT_SAME_ATTR(pad, pad_grad, top);
REMAT_SAME_ATTR(pad, pad_grad, bottom);
REMAT_SAME_ATTR(pad, pad_grad, left);
REMAT_SAME_ATTR(pad, pad_grad, right);
#undef REMAT_SAME_ATTR

/// Innermost dimension of |t| (1 for a scalar).
inline int64_t last_dim(const TensorRef& t) { return t.rank == 0 ? 1 : t.dims[t.rank - 1]; }

/// Rows of |t| along its last axis: numel / last_dim (0 for an empty tensor).
inline int64_t rows_of(const TensorRef& t) {
  const int64_t n = last_dim(t);
  return n > 0 ? t.numel / n : 0;
}

/// Bytes of one element of |t|, derived from its size so that any dtype copies correctly.
inline int64_t elem_bytes(const TensorRef& t) {
  return t.numel > 0 ? static_cast<int64_t>(t.bytes) / t.numel : 4;
}

/// The shape of matmul |call| (inputs A, B; output C; iattrs trans_a, trans_b).
inline MatmulShape matmul_shape(const OpCall& call) {
  const TensorRef& a = *call.inputs[0];
  const TensorRef& b = *call.inputs[1];
  const TensorRef& c = *call.outputs[0];
  return matmul_shape(a.dims, a.rank, a.numel, b.dims, b.rank, b.numel, c.dims, c.rank, c.numel,
                      iattr(call, attr::matmul::trans_a) != 0,
                      iattr(call, attr::matmul::trans_b) != 0);
}

/// The shape of head_matmul |call| (inputs A, B; output C; iattrs trans_a, trans_b, heads,
/// interleaved); heads below 1 are taken as 1.
inline HeadMatmulShape head_matmul_shape(const OpCall& call) {
  const TensorRef& a = *call.inputs[0];
  const TensorRef& b = *call.inputs[1];
  const TensorRef& c = *call.outputs[0];
  const int64_t heads = iattr(call, attr::head_matmul::heads);
  return head_matmul_shape(a.dims, a.rank, a.numel, b.dims, b.rank, b.numel, c.dims, c.rank,
                           c.numel, iattr(call, attr::head_matmul::trans_a) != 0,
                           iattr(call, attr::head_matmul::trans_b) != 0, heads > 0 ? heads : 1,
                           iattr(call, attr::head_matmul::interleaved));
}

/// select / select_grad seen as copies of rows: the full tensor (select's input, select_grad's
/// output) is [outer, n, inner] elements of |elem_bytes|, and the op moves row |index| of n.
struct SelectView {
  int64_t outer;       ///< Product of the dims before the axis.
  int64_t n;           ///< The axis's length.
  int64_t inner;       ///< Product of the dims after the axis.
  int64_t index;       ///< The selected index along the axis.
  int64_t elem_bytes;  ///< Bytes per element.
  bool valid;          ///< False when axis or index lie outside the full tensor's shape.
};

/// The view of select or select_grad |call| (|grad| true for select_grad).
inline SelectView select_view(const OpCall& call, bool grad) {
  const TensorRef& full = grad ? *call.outputs[0] : *call.inputs[0];
  const int64_t axis = iattr(call, attr::select::axis), index = iattr(call, attr::select::index);
  SelectView v{1, 1, 1, index, elem_bytes(full), false};
  if (axis < 0 || axis >= full.rank || index < 0 || index >= full.dims[axis]) return v;
  for (int64_t k = 0; k < axis; ++k) v.outer *= full.dims[k];
  for (int64_t k = axis + 1; k < full.rank; ++k) v.inner *= full.dims[k];
  v.n = full.dims[axis];
  v.valid = true;
  return v;
}

/// reduce_sum and broadcast: their full tensor (reduce_sum's input, broadcast's output) as
/// [outer, n, inner] around the |count| consecutive axes from |axis| of their attributes.
struct ReducedView {
  int64_t outer = 1;  ///< Product of the dims before the axes.
  int64_t n = 1;      ///< Product of the reduced axes' dims.
  int64_t inner = 1;  ///< Product of the dims after them.
};

/// The view of reduce_sum or broadcast |call| over its full tensor |full|.
inline ReducedView reduced_view(const OpCall& call, const TensorRef& full) {
  const int64_t axis = iattr(call, attr::reduce_sum::axis);
  const int64_t count = iattr(call, attr::reduce_sum::count);
  ReducedView v;
  for (int64_t k = 0; k < full.rank; ++k) {
    int64_t& part = k < axis ? v.outer : k < axis + count ? v.n : v.inner;
    part *= full.dims[k];
  }
  return v;
}

}  // namespace remat

#endif  // REMAT_BACKENDS_SHARED_OP_ARGS_H_
