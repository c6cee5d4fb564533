// Fused attention on the GPU backends (plan/op_catalogue.h: attention, attention_grad): per
// batch entry, a chunk of heads at a time, the products on the backend's BLAS (Launcher::gemm,
// one strided batch over the chunk's heads) and the softmax between them in row kernels
// (kernels/attention.cl). The chunk's [Sq, Sk] scores live at the end of the backend's
// workspace (attention_scores_bytes), so the plan's arena never holds them.
#include "backends/gpu/ops/ops.h"
#include "backends/shared/op_args.h"
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

// Heads per chunk: as many as REMAT_GPU_ATTENTION_SCRATCH_FLOATS hold, at least one.
int64_t chunk_heads(const AttentionSizes& s, uint16_t code) {
  const int64_t per_head = s.sq * s.sk * matrices_per_head(code);
  const int64_t fit = static_cast<int64_t>(REMAT_GPU_ATTENTION_SCRATCH_FLOATS) / per_head;
  return fit < 1 ? 1 : fit > s.heads ? s.heads : fit;
}

AttentionSizes sizes_of_call(const OpCall& call) {
  if (call.code == kAttentionCode)
    return sizes_of(*call.inputs[0], *call.inputs[1], *call.inputs[2],
                    iattr(call, attr::attention::heads));
  return sizes_of(*call.inputs[1], *call.inputs[2], *call.inputs[3],
                  iattr(call, attr::attention_grad::heads));
}

// Head h's [rows, width] matrix of batch entry b inside a [B, rows, heads * width] tensor, as
// a GEMM operand whose batch runs over heads.
GemmOperand head_operand(const TensorRef& t, int64_t b, int64_t h, int64_t rows, int64_t heads,
                         int64_t width) {
  const int64_t at = (b * rows * heads + h) * width;
  return {t.region, t.offset + static_cast<uint64_t>(at) * sizeof(float), heads * width, width};
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

// ATTENTION_ROWS_PARAMS of kernels/attention.cl.
void rows_params(Args& a, const OpCall& call, uint32_t mask_at, const AttentionSizes& s, int64_t b,
                 int64_t h0, int64_t heads_in_chunk, float p, int64_t key, uint32_t team) {
  const bool has_mask = call.num_inputs > mask_at;
  const bool per_batch = has_mask && call.inputs[mask_at]->rank == 3;
  a.u64(b).u64(h0).u64(heads_in_chunk * s.sq);
  a.u64(per_batch ? s.sq * s.sk : int64_t{0}).u32(has_mask ? 1u : 0u);
  a.u64(s.heads).u64(s.sq).u64(s.sk).f32(p).u64(key).u32(team);
}

}  // namespace

uint64_t attention_scores_bytes(const OpCall& call) {
  if (call.code != kAttentionCode && call.code != kAttentionGradCode) return 0;
  const AttentionSizes s = sizes_of_call(call);
  const int64_t floats = chunk_heads(s, call.code) * s.sq * s.sk * matrices_per_head(call.code);
  return static_cast<uint64_t>(floats) * sizeof(float);
}

remat_status attention(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  namespace at = attr::attention;
  const TensorRef &q = *call.inputs[0], &k = *call.inputs[1], &v = *call.inputs[2];
  const TensorRef &context = *call.outputs[0], &lse = *call.outputs[1];
  const AttentionSizes s = sizes_of_call(call);
  const float scale = fattr(call, at::scale), p = fattr(call, at::p);
  const int64_t key = iattr(call, at::key), chunk = chunk_heads(s, call.code);
  uint64_t base = 0;
  remat_status status = scratch_base(l, call, &base, err);
  const uint32_t team = row_team(l, kKernel_attention_probs, s.sk);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h0 = 0; h0 < s.heads && status == REMAT_OK; h0 += chunk) {
      const int64_t n = chunk < s.heads - h0 ? chunk : s.heads - h0;
      const GemmOperand scores = scores_operand(base, 0, chunk, s);
      // scores = scale * q k^T, a [Sq, Sk] matrix per head.
      status = l.gemm(
          {false, true, s.sq, s.sk, s.d, n, scale, head_operand(q, b, h0, s.sq, s.heads, s.d),
           head_operand(k, b, h0, s.sk, s.heads, s.d), scores, false},
          call, err);
      if (status != REMAT_OK) break;
      Args a(l, kKernel_attention_probs);
      a.tensor(workspace_tensor(scores.offset, n * s.sq * s.sk))
          .tensor(mask_or(call, 3, q))
          .tensor(lse);
      rows_params(a, call, 3, s, b, h0, n, p, key, team);
      a.state().scratch();
      status = a.launch_rows(n * s.sq, team, call, err);
      if (status != REMAT_OK) break;
      // context = probabilities v.
      status = l.gemm({false, false, s.sq, s.dv, s.sk, n, 1.0f, scores,
                       head_operand(v, b, h0, s.sk, s.heads, s.dv),
                       head_operand(context, b, h0, s.sq, s.heads, s.dv), false},
                      call, err);
    }
    if (status != REMAT_OK) break;
  }
  return status;
}

// Per chunk: the scores and dcontext v^T recomputed, attention_grad_probs between them, then
// dv = P^T dcontext, dq = dS k and dk = dS^T q, each written once (no sums across chunks).
remat_status attention_grad(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  namespace at = attr::attention_grad;
  const TensorRef &dcontext = *call.inputs[0], &q = *call.inputs[1], &k = *call.inputs[2];
  const TensorRef &v = *call.inputs[3], &context = *call.inputs[4], &lse = *call.inputs[5];
  const TensorRef &dq = *call.outputs[0], &dk = *call.outputs[1], &dv = *call.outputs[2];
  const AttentionSizes s = sizes_of_call(call);
  const float scale = fattr(call, at::scale), p = fattr(call, at::p);
  const int64_t key = iattr(call, at::key), chunk = chunk_heads(s, call.code);
  uint64_t base = 0;
  remat_status status = scratch_base(l, call, &base, err);
  const uint32_t team = row_team(l, kKernel_attention_grad_probs, s.sk);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h0 = 0; h0 < s.heads && status == REMAT_OK; h0 += chunk) {
      const int64_t n = chunk < s.heads - h0 ? chunk : s.heads - h0;
      const GemmOperand probs = scores_operand(base, 0, chunk, s);
      const GemmOperand grads = scores_operand(base, 1, chunk, s);
      const GemmOperand q_h = head_operand(q, b, h0, s.sq, s.heads, s.d);
      const GemmOperand k_h = head_operand(k, b, h0, s.sk, s.heads, s.d);
      const GemmOperand dc_h = head_operand(dcontext, b, h0, s.sq, s.heads, s.dv);
      status = l.gemm({false, true, s.sq, s.sk, s.d, n, scale, q_h, k_h, probs, false}, call, err);
      if (status == REMAT_OK) {
        status = l.gemm({false, true, s.sq, s.sk, s.dv, n, 1.0f, dc_h,
                         head_operand(v, b, h0, s.sk, s.heads, s.dv), grads, false},
                        call, err);
      }
      if (status != REMAT_OK) break;
      Args a(l, kKernel_attention_grad_probs);
      a.tensor(workspace_tensor(probs.offset, n * s.sq * s.sk))
          .tensor(workspace_tensor(grads.offset, n * s.sq * s.sk))
          .tensor(dcontext)
          .tensor(context)
          .tensor(lse)
          .tensor(mask_or(call, 6, q))
          .u64(s.dv)
          .f32(scale);
      rows_params(a, call, 6, s, b, h0, n, p, key, team);
      a.state().scratch();
      status = a.launch_rows(n * s.sq, team, call, err);
      if (status == REMAT_OK) {
        status = l.gemm({true, false, s.sk, s.dv, s.sq, n, 1.0f, probs, dc_h,
                         head_operand(dv, b, h0, s.sk, s.heads, s.dv), false},
                        call, err);
      }
      if (status == REMAT_OK) {
        status = l.gemm({false, false, s.sq, s.d, s.sk, n, 1.0f, grads, k_h,
                         head_operand(dq, b, h0, s.sq, s.heads, s.d), false},
                        call, err);
      }
      if (status == REMAT_OK) {
        status = l.gemm({true, false, s.sk, s.d, s.sq, n, 1.0f, grads, q_h,
                         head_operand(dk, b, h0, s.sk, s.heads, s.d), false},
                        call, err);
      }
    }
    if (status != REMAT_OK) break;
  }
  return status;
}

}  // namespace gpu
}  // namespace remat
