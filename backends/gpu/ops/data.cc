// Data movement ops on the GPU backends: embedding and its gradient, permute, copy, select and
// its gradient, concat and slice (pitched row copies), pad and its gradient (kernels/data.cl).
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"
#include "plan/ops.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace gpu {
namespace {

size_t items(int64_t v) { return static_cast<size_t>(v); }

// Copies |rows| runs of |run| bytes from |src| (rows |src_pitch| bytes apart) to |dst| (rows
// |dst_pitch| apart) with kernel copy_rows, in 4-byte words when every offset allows, else in
// 2-byte halves: offsets, pitches and runs are whole elements, of 2 bytes at least.
remat_status copy_rows(Launcher& l, const OpCall& call, const TensorRef& src, uint64_t src_pitch,
                       const TensorRef& dst, uint64_t dst_pitch, uint64_t run, int64_t rows,
                       ErrorBuffer* err) {
  if (run == 0 || rows == 0) return REMAT_OK;
  const bool words = (src.offset | src_pitch | dst.offset | dst_pitch | run) % 4 == 0;
  const uint64_t unit = words ? 4 : 2;
  Args a(l, kKernel_copy_rows);
  a.tensor(src).u64(src_pitch).tensor(dst).u64(dst_pitch).u64(run).u64(rows).u64(unit);
  return a.launch(static_cast<size_t>(run / unit) * items(rows), call, err);
}

// How embedding_grad cuts the vocabulary: |ranges| ranges of |span| ids (the last may be
// shorter), one work item per column and range.
struct EmbeddingRanges {
  int64_t span, ranges;
};

// Ranges for about kEmbeddingGradItems work items, at most one range per id and at least one
// (work item 0 reports bad ids also where the vocabulary is empty). Every work item reads all
// the ids, so more ranges cost more reads in all: enough work items to occupy a GPU's cores,
// no more.
EmbeddingRanges embedding_ranges(int64_t h, int64_t vocab) {
  constexpr int64_t kEmbeddingGradItems = 64 * 1024;
  int64_t want = h > 0 ? (kEmbeddingGradItems + h - 1) / h : 1;
  if (want > vocab) want = vocab;
  if (want < 1) want = 1;
  const int64_t span = vocab > 0 ? (vocab + want - 1) / want : 1;
  return {span, vocab > 0 ? (vocab + span - 1) / span : 1};
}

remat_status embedding_op(Launcher& l, const OpCall& call, bool grad, ErrorBuffer* err) {
  const TensorRef& ids = grad ? *call.inputs[1] : *call.inputs[0];
  const TensorRef& table = grad ? *call.outputs[0] : *call.inputs[1];
  const int64_t h = last_dim(table);
  const int64_t vocab = h > 0 ? table.numel / h : 0;
  const int64_t count = ids.numel;
  remat_status status = l.begin_check(call, err);
  // The gradient scatters into dtable: it starts from zeros.
  if (status == REMAT_OK && grad) status = l.zero(*call.outputs[0], call, err);
  if (status != REMAT_OK) return status;
  // Typed: the lookup's table and out, the gradient's dy (a 16-bit dtable is widened: its sums
  // are float32, rounded once).
  Args a(l, grad ? kKernel_embedding_grad : kKernel_embedding);
  if (grad) {
    a.typed(*call.inputs[0]).tensor(*call.inputs[1]).tensor(*call.outputs[0]);
  } else {
    a.tensor(*call.inputs[0]).typed(*call.inputs[1]).typed(*call.outputs[0]);
  }
  a.u64(count).u64(h).u64(vocab);
  // The lookup has one work item per output element, the gradient one per column and range of
  // the vocabulary.
  const EmbeddingRanges r = embedding_ranges(h, vocab);
  if (grad) a.u64(r.span).u64(r.ranges);
  a.state().op(call);
  status = a.launch(grad ? items(h * r.ranges) : items(count * h), call, err);
  return status == REMAT_OK ? finish_check(l, call, ids, err) : status;
}

remat_status select_op(Launcher& l, const OpCall& call, bool grad, ErrorBuffer* err) {
  const SelectView v = select_view(call, grad);
  if (!v.valid) {
    return set_error(err, REMAT_ERROR_OUT_OF_RANGE,
                     "op %u (%s): axis %lld / index %lld outside the input's shape", call.index,
                     op_name(call.code), static_cast<long long>(iattr(call, attr::select::axis)),
                     static_cast<long long>(v.index));
  }
  const TensorRef& x = *call.inputs[0];
  const TensorRef& y = *call.outputs[0];
  const uint64_t run = static_cast<uint64_t>(v.inner * v.elem_bytes);
  if (grad) {
    const remat_status status = l.zero(y, call, err);
    if (status != REMAT_OK) return status;
  }
  // Rows of |run| bytes: the full side (select's input, select_grad's output) has pitch
  // n * run and starts at row |index|; the other side is dense.
  TensorRef full = grad ? y : x;
  full.offset += static_cast<uint64_t>(v.index) * run;
  const uint64_t full_pitch = static_cast<uint64_t>(v.n) * run;
  if (grad) return copy_rows(l, call, x, run, full, full_pitch, run, v.outer, err);
  return copy_rows(l, call, full, full_pitch, y, run, run, v.outer, err);
}

// pad (|grad| false) and pad_grad: one work item per element of the output (the padded y, or
// dx, the unpadded one).
remat_status pad_op(Launcher& l, const OpCall& call, bool grad, ErrorBuffer* err) {
  const TensorRef& src = *call.inputs[0];
  const TensorRef& dst = *call.outputs[0];
  const TensorRef& small = grad ? dst : src;
  const Nchw in = nchw_of(small.dims, small.rank);
  Args a(l, grad ? kKernel_pad_grad : kKernel_pad);
  a.tensor(src).tensor(dst).u64(in.n * in.c).u64(in.h).u64(in.w);
  const int64_t top = iattr(call, attr::pad::top), bottom = iattr(call, attr::pad::bottom);
  const int64_t left = iattr(call, attr::pad::left), right = iattr(call, attr::pad::right);
  a.u64(in.h + top + bottom).u64(in.w + left + right);
  a.u64(top).u64(left);
  if (!grad) a.f32(fattr(call, attr::pad::value));
  return a.launch(items(dst.numel), call, err);
}

}  // namespace

remat_status embedding(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return embedding_op(l, call, false, err);
}

remat_status embedding_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return embedding_op(l, call, true, err);
}

remat_status permute(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const TensorRef& y = *call.outputs[0];
  const int64_t r = iattr(call, attr::permute::rank);
  if (r < 1 || r > REMAT_MAX_RANK || call.num_iattrs < static_cast<uint32_t>(1 + 2 * r)) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (permute): rank %lld needs %lld attributes, has %u", call.index,
                     static_cast<long long>(r), static_cast<long long>(1 + 2 * r), call.num_iattrs);
  }
  const int64_t* d = call.iattrs + attr::permute::dim(0);
  const int64_t* p = call.iattrs + attr::permute::perm(r, 0);
  int64_t in_stride[REMAT_MAX_RANK];
  int64_t total = 1;
  for (int64_t k = r - 1; k >= 0; --k) {
    in_stride[k] = total;
    total *= d[k];
  }
  static_assert(REMAT_MAX_RANK == 6, "kernels/data.cl permute takes six dims and six strides");
  uint64_t out_dims[REMAT_MAX_RANK] = {1, 1, 1, 1, 1, 1}, src_strides[REMAT_MAX_RANK] = {};
  for (int64_t k = 0; k < r; ++k) {
    if (p[k] < 0 || p[k] >= r) {
      return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                       "op %u (permute): axis %lld of the permutation is %lld, outside [0, %lld)",
                       call.index, static_cast<long long>(k), static_cast<long long>(p[k]),
                       static_cast<long long>(r));
    }
    out_dims[k] = static_cast<uint64_t>(d[p[k]]);
    src_strides[k] = static_cast<uint64_t>(in_stride[p[k]]);
  }
  if (total != x.numel || total != y.numel) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (permute): attribute dims hold %lld elements, tensors %lld -> %lld",
                     call.index, static_cast<long long>(total), static_cast<long long>(x.numel),
                     static_cast<long long>(y.numel));
  }
  Args a(l, kKernel_permute);
  a.tensor(x).tensor(y).u64(total).u64(elem_bytes(x)).i32(static_cast<int32_t>(r));
  for (uint64_t v : out_dims) a.u64(v);
  for (uint64_t v : src_strides) a.u64(v);
  return a.launch(items(total), call, err);
}

remat_status copy(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  if (call.outputs[0]->bytes == 0) return REMAT_OK;
  return l.copy(*call.inputs[0], *call.outputs[0], call, err);
}

remat_status select(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return select_op(l, call, false, err);
}

remat_status select_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return select_op(l, call, true, err);
}

remat_status pad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return pad_op(l, call, false, err);
}

remat_status pad_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return pad_op(l, call, true, err);
}

// One row copy per input: input i's [outer, n_i * inner] rows go to y's rows, n * inner
// elements apart, after the inputs before it along the axis.
remat_status concat(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& y = *call.outputs[0];
  const int64_t axis = iattr(call, attr::concat::axis);
  const AxisView out = axis_view(y.dims, y.rank, axis);
  const int64_t es = elem_bytes(y);
  const uint64_t row_bytes = static_cast<uint64_t>(out.n * out.inner * es);
  TensorRef dst = y;
  for (uint32_t i = 0; i < call.num_inputs; ++i) {
    const TensorRef& x = *call.inputs[i];
    const uint64_t run = static_cast<uint64_t>(x.dims[axis] * out.inner * es);
    const remat_status status = copy_rows(l, call, x, run, dst, row_bytes, run, out.outer, err);
    if (status != REMAT_OK) return status;
    dst.offset += run;
  }
  return REMAT_OK;
}

// One row copy: x's [outer, n * inner] rows from element offset * inner on, m * inner each.
remat_status slice(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const TensorRef& y = *call.outputs[0];
  const int64_t axis = iattr(call, attr::slice::axis);
  const AxisView in = axis_view(x.dims, x.rank, axis);
  const int64_t es = elem_bytes(y);
  const uint64_t run = static_cast<uint64_t>(y.dims[axis] * in.inner * es);
  TensorRef src = x;
  src.offset += static_cast<uint64_t>(iattr(call, attr::slice::offset) * in.inner * es);
  return copy_rows(l, call, src, static_cast<uint64_t>(in.n * in.inner * es), y, run, run, in.outer,
                   err);
}

}  // namespace gpu
}  // namespace remat
