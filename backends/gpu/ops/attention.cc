// Fused attention on the GPU backends (plan/op_catalogue.h: attention, attention_grad): a chunk
// of (batch entry, head) pairs at a time (heads of one batch entry, or batch entries of one
// head: Chunking), the products on the backend's BLAS (Launcher::gemm, one strided batch over
// the chunk) and the softmax between them in row kernels
// (kernels/attention.cl). The chunk's [Sq, Sk] scores live at the end of the backend's
// workspace (attention_scores_bytes), so the plan's arena never holds them.
#include <algorithm>

#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"
#include "plan/gpu_scratch.h"
#include "plan/ops.h"

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

constexpr uint16_t kAttentionCode = static_cast<uint16_t>(OpCode::kAttention);
constexpr uint16_t kAttentionGradCode = static_cast<uint16_t>(OpCode::kAttentionGrad);

// [Sq, Sk] score matrices per head: one in attention, two (scores and their gradient) in
// attention_grad.
int64_t matrices_per_head(uint16_t code) { return code == kAttentionGradCode ? 2 : 1; }

// How an op walks its (batch entry, head) pairs (plan/gpu_scratch.h: as many entries a chunk as
// kGpuAttentionScratchFloats hold, along the dimension that needs fewer chunks).
using Chunking = GpuAttentionChunking;

Chunking chunking(const AttentionSizes& s, uint16_t code) {
  return gpu_attention_chunking(s.batch, s.heads, s.sq, s.sk, matrices_per_head(code));
}

AttentionSizes sizes_of_call(const OpCall& call) {
  if (call.code == kAttentionCode)
    return sizes_of(*call.inputs[0], *call.inputs[1], *call.inputs[2],
                    iattr(call, attr::attention::heads));
  return sizes_of(*call.inputs[1], *call.inputs[2], *call.inputs[3],
                  iattr(call, attr::attention_grad::heads));
}

// The [rows, width] matrix of (batch entry b, head h) inside a [B, rows, heads * width] tensor,
// as a GEMM operand whose batch runs over the chunk's entries (heads, or batch entries).
GemmOperand entry_operand(const TensorRef& t, int64_t b, int64_t h, int64_t rows, int64_t heads,
                          int64_t width, const Chunking& c) {
  const int64_t at = (b * rows * heads + h) * width;
  return {t.region, t.offset + static_cast<uint64_t>(at) * sizeof(float), heads * width,
          c.batch_inner ? rows * heads * width : width};
}

// Matrix |index| of the chunk's scores: [heads of the chunk, Sq, Sk] floats from |base|.
GemmOperand scores_operand(uint64_t base, int64_t index, int64_t chunk, const AttentionSizes& s) {
  const uint64_t at = base + static_cast<uint64_t>(index * chunk * s.sq * s.sk) * sizeof(float);
  return {kWorkspaceRegion, at, s.sk, s.sq * s.sk};
}

// The mask, or |q| in its place when there is none (the kernels do not read it then).
const TensorRef& mask_or(const OpCall& call, uint32_t at, const TensorRef& q) {
  return call.num_inputs > at ? *call.inputs[at] : q;
}

// The dropout draws' first element (e0 of kernels/attention.cl): a data-parallel rank's
// probabilities are elements of the whole batch's (StepContext::rank), and so are those of a
// chunk |part| of an op's batch.
uint64_t first_draw(const AttentionSizes& s, const StepContext& ctx, BatchPart part) {
  const uint64_t item = static_cast<uint64_t>(s.heads * s.sq * s.sk);
  return (ctx.rank * static_cast<uint64_t>(part.whole) + static_cast<uint64_t>(part.first)) * item;
}

// ATTENTION_ROWS_PARAMS of kernels/attention.cl.
void rows_params(Args& a, const OpCall& call, uint32_t mask_at, const AttentionSizes& s, int64_t b0,
                 int64_t h0, const Chunking& c, int64_t entries, float p, int64_t key,
                 uint32_t team, uint64_t e0) {
  const bool has_mask = call.num_inputs > mask_at;
  const bool per_batch = has_mask && call.inputs[mask_at]->rank == 3;
  a.u64(b0).u64(h0).u64(int64_t{c.batch_inner ? 1 : 0}).u64(int64_t{c.batch_inner ? 0 : 1});
  a.u64(entries * s.sq);
  a.u64(per_batch ? s.sq * s.sk : int64_t{0}).u32(has_mask ? 1u : 0u);
  a.u64(s.heads).u64(s.sq).u64(s.sk).f32(p).u64(key).u32(team).u64(e0);
}

// One chunk of an op's (batch entry, head) pairs: its first entry and how many it holds.
struct Chunk {
  int64_t b, h, n;
};

// Calls body(chunk) for every chunk of |c| in order, stopping at the first error it returns.
template <typename Body>
remat_status for_each_chunk(const Chunking& c, Body body) {
  for (int64_t outer = 0; outer < c.outer; ++outer) {
    for (int64_t first = 0; first < c.inner; first += c.per_chunk) {
      const Chunk chunk{c.batch_inner ? first : outer, c.batch_inner ? outer : first,
                        std::min(c.per_chunk, c.inner - first)};
      const remat_status status = body(chunk);
      if (status != REMAT_OK) return status;
    }
  }
  return REMAT_OK;
}

}  // namespace

uint64_t attention_scores_bytes(const OpCall& call) {
  if (call.code != kAttentionCode && call.code != kAttentionGradCode) return 0;
  const AttentionSizes s = sizes_of_call(call);
  return gpu_attention_scratch_bytes(s.batch, s.heads, s.sq, s.sk, matrices_per_head(call.code));
}

remat_status attention(Launcher& l, const OpCall& call, const StepContext& ctx, ErrorBuffer* err) {
  return attention_part(l, call, ctx, {0, sizes_of_call(call).batch}, err);
}

remat_status attention_grad(Launcher& l, const OpCall& call, const StepContext& ctx,
                            ErrorBuffer* err) {
  return attention_grad_part(l, call, ctx, {0, sizes_of_call(call).batch}, err);
}

remat_status attention_part(Launcher& l, const OpCall& call, const StepContext& ctx, BatchPart part,
                            ErrorBuffer* err) {
  namespace at = attr::attention;
  const TensorRef &q = *call.inputs[0], &k = *call.inputs[1], &v = *call.inputs[2];
  const TensorRef &context = *call.outputs[0], &lse = *call.outputs[1];
  const AttentionSizes s = sizes_of_call(call);
  const Chunking c = chunking(s, call.code);
  const float scale = fattr(call, at::scale), p = fattr(call, at::p);
  const int64_t key = iattr(call, at::key);
  uint64_t base = 0;
  const remat_status status = scratch_base(l, call, &base, err);
  if (status != REMAT_OK) return status;
  const uint32_t team = row_team(l, kKernel_attention_probs, s.sk);
  const GemmOperand scores = scores_operand(base, 0, c.per_chunk, s);
  return for_each_chunk(c, [&](const Chunk& e) {
    // scores = scale * q k^T, a [Sq, Sk] matrix per entry.
    remat_status st = l.gemm({false, true, s.sq, s.sk, s.d, e.n, scale,
                              entry_operand(q, e.b, e.h, s.sq, s.heads, s.d, c),
                              entry_operand(k, e.b, e.h, s.sk, s.heads, s.d, c), scores, false},
                             call, err);
    if (st != REMAT_OK) return st;
    Args a(l, kKernel_attention_probs);
    a.tensor(workspace_tensor(scores.offset, e.n * s.sq * s.sk))
        .tensor(mask_or(call, 3, q))
        .tensor(lse);
    rows_params(a, call, 3, s, e.b, e.h, c, e.n, p, key, team, first_draw(s, ctx, part));
    a.state().scratch();
    st = a.launch_rows(e.n * s.sq, team, call, err);
    if (st != REMAT_OK) return st;
    // context = probabilities v.
    return l.gemm({false, false, s.sq, s.dv, s.sk, e.n, 1.0f, scores,
                   entry_operand(v, e.b, e.h, s.sk, s.heads, s.dv, c),
                   entry_operand(context, e.b, e.h, s.sq, s.heads, s.dv, c), false},
                  call, err);
  });
}

// Per chunk: the scores and dcontext v^T recomputed, attention_grad_probs between them, then
// dv = P^T dcontext, dq = dS k and dk = dS^T q, each written once (no sums across chunks).
remat_status attention_grad_part(Launcher& l, const OpCall& call, const StepContext& ctx,
                                 BatchPart part, ErrorBuffer* err) {
  namespace at = attr::attention_grad;
  const TensorRef &dcontext = *call.inputs[0], &q = *call.inputs[1], &k = *call.inputs[2];
  const TensorRef &v = *call.inputs[3], &context = *call.inputs[4], &lse = *call.inputs[5];
  const TensorRef &dq = *call.outputs[0], &dk = *call.outputs[1], &dv = *call.outputs[2];
  const AttentionSizes s = sizes_of_call(call);
  const Chunking c = chunking(s, call.code);
  const float scale = fattr(call, at::scale), p = fattr(call, at::p);
  const int64_t key = iattr(call, at::key);
  uint64_t base = 0;
  const remat_status status = scratch_base(l, call, &base, err);
  if (status != REMAT_OK) return status;
  const uint32_t team = row_team(l, kKernel_attention_grad_probs, s.sk);
  const GemmOperand probs = scores_operand(base, 0, c.per_chunk, s);
  const GemmOperand grads = scores_operand(base, 1, c.per_chunk, s);
  return for_each_chunk(c, [&](const Chunk& e) {
    const GemmOperand q_e = entry_operand(q, e.b, e.h, s.sq, s.heads, s.d, c);
    const GemmOperand k_e = entry_operand(k, e.b, e.h, s.sk, s.heads, s.d, c);
    const GemmOperand dc_e = entry_operand(dcontext, e.b, e.h, s.sq, s.heads, s.dv, c);
    remat_status st =
        l.gemm({false, true, s.sq, s.sk, s.d, e.n, scale, q_e, k_e, probs, false}, call, err);
    if (st == REMAT_OK) {
      st = l.gemm({false, true, s.sq, s.sk, s.dv, e.n, 1.0f, dc_e,
                   entry_operand(v, e.b, e.h, s.sk, s.heads, s.dv, c), grads, false},
                  call, err);
    }
    if (st != REMAT_OK) return st;
    Args a(l, kKernel_attention_grad_probs);
    a.tensor(workspace_tensor(probs.offset, e.n * s.sq * s.sk))
        .tensor(workspace_tensor(grads.offset, e.n * s.sq * s.sk))
        .tensor(dcontext)
        .tensor(context)
        .tensor(lse)
        .tensor(mask_or(call, 6, q))
        .u64(s.dv)
        .f32(scale);
    rows_params(a, call, 6, s, e.b, e.h, c, e.n, p, key, team, first_draw(s, ctx, part));
    a.state().scratch();
    st = a.launch_rows(e.n * s.sq, team, call, err);
    if (st == REMAT_OK) {
      st = l.gemm({true, false, s.sk, s.dv, s.sq, e.n, 1.0f, probs, dc_e,
                   entry_operand(dv, e.b, e.h, s.sk, s.heads, s.dv, c), false},
                  call, err);
    }
    if (st == REMAT_OK) {
      st = l.gemm({false, false, s.sq, s.d, s.sk, e.n, 1.0f, grads, k_e,
                   entry_operand(dq, e.b, e.h, s.sq, s.heads, s.d, c), false},
                  call, err);
    }
    if (st == REMAT_OK) {
      st = l.gemm({true, false, s.sk, s.d, s.sq, e.n, 1.0f, grads, q_e,
                   entry_operand(dk, e.b, e.h, s.sk, s.heads, s.d, c), false},
                  call, err);
    }
    return st;
  });
}

}  // namespace gpu
}  // namespace remat
