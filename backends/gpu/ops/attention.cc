// Fused attention on the GPU backends (plan/op_catalogue.h: attention, attention_grad;
// kernels/attention.cl): a group per (batch, head, range of group-size queries or keys), one
// work item per query or key, the other side in tiles staged in work-group memory.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"

namespace remat {
namespace gpu {
namespace {

// The sizes of an attention op from its q, k and v (checked by plan/op_check_attention.cc).
struct AttentionSizes {
  int64_t batch, sq, sk, heads, d, dv;
};

AttentionSizes sizes_of(const TensorRef& q, const TensorRef& k, const TensorRef& v, int64_t heads) {
  return {q.dims[0], q.dims[1], k.dims[1], heads, q.dims[2] / heads, v.dims[2] / heads};
}

// Work-group memory of the staging tile, and |extra| floats after it.
size_t tile_bytes(size_t extra) {
  return (REMAT_GPU_ATTENTION_TILE * REMAT_GPU_ATTENTION_CHUNK + extra) * sizeof(float);
}

// The mask, or |q| in its place when there is none (the kernels do not read it then).
const TensorRef& mask_or(const OpCall& call, uint32_t at, const TensorRef& q) {
  return call.num_inputs > at ? *call.inputs[at] : q;
}

// ATTENTION_PARAMS of kernels/attention.cl.
void attention_params(Args& a, const OpCall& call, uint32_t mask_at, const AttentionSizes& s,
                      float scale, float p, int64_t key) {
  const bool has_mask = call.num_inputs > mask_at;
  const bool per_batch = has_mask && call.inputs[mask_at]->rank == 3;
  a.u64(per_batch ? s.sq * s.sk : int64_t{0}).u32(has_mask ? 1u : 0u);
  a.u64(s.heads).u64(s.sq).u64(s.sk).u64(s.d).u64(s.dv).f32(scale).f32(p).u64(key);
}

// A group of group_size(kernel) rows (of |rows|) per (batch, head).
remat_status launch_rows(Launcher& l, Args& a, KernelId kernel, const AttentionSizes& s,
                         int64_t rows, const OpCall& call, ErrorBuffer* err) {
  const size_t group = l.group_size(kernel);
  const size_t tiles = (static_cast<size_t>(rows) + group - 1) / group;
  return a.launch(static_cast<size_t>(s.batch * s.heads) * tiles * group, call, err);
}

}  // namespace

remat_status attention(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  namespace at = attr::attention;
  const TensorRef& q = *call.inputs[0];
  const AttentionSizes s = sizes_of(q, *call.inputs[1], *call.inputs[2], iattr(call, at::heads));
  Args a(l, kKernel_attention);
  for (int i = 0; i < 3; ++i) a.tensor(*call.inputs[i]);
  a.tensor(mask_or(call, 3, q)).tensor(*call.outputs[0]).tensor(*call.outputs[1]);
  attention_params(a, call, 3, s, fattr(call, at::scale), fattr(call, at::p), iattr(call, at::key));
  a.state();
  l.local(tile_bytes(0));
  return launch_rows(l, a, kKernel_attention, s, s.sq, call, err);
}

// Two kernels, neither adding into another's output: dq a work item per query, dk and dv a
// work item per key.
remat_status attention_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  namespace at = attr::attention_grad;
  const TensorRef& q = *call.inputs[1];
  const AttentionSizes s = sizes_of(q, *call.inputs[2], *call.inputs[3], iattr(call, at::heads));
  const float scale = fattr(call, at::scale), p = fattr(call, at::p);
  const int64_t key = iattr(call, at::key);
  Args dq(l, kKernel_attention_grad_q);
  for (int i = 0; i < 6; ++i) dq.tensor(*call.inputs[i]);
  dq.tensor(mask_or(call, 6, q)).tensor(*call.outputs[0]);
  attention_params(dq, call, 6, s, scale, p, key);
  dq.state();
  l.local(tile_bytes(0));
  const remat_status status = launch_rows(l, dq, kKernel_attention_grad_q, s, s.sq, call, err);
  if (status != REMAT_OK) return status;
  Args kv(l, kKernel_attention_grad_kv);
  for (int i = 0; i < 6; ++i) kv.tensor(*call.inputs[i]);
  kv.tensor(mask_or(call, 6, q)).tensor(*call.outputs[1]).tensor(*call.outputs[2]);
  attention_params(kv, call, 6, s, scale, p, key);
  kv.state();
  l.local(tile_bytes(2 * REMAT_GPU_ATTENTION_TILE));
  return launch_rows(l, kv, kKernel_attention_grad_kv, s, s.sk, call, err);
}

}  // namespace gpu
}  // namespace remat
