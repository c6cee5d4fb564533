// Fused attention and its gradient (plan/op_catalogue.h: attention, attention_grad) on the GPU
// backends: the products are the backend's BLAS (ops/attention.cc), a chunk of heads at a time,
// with the chunk's [Sq, Sk] scores in the backend's workspace, never in the plan's arena. These
// are the row kernels between the products, one team per row of scores (kernels/common.cl),
// a row being one (head of the chunk, query).
//
// attention_probs turns scale * q k^T into the dropped-out probabilities in place and writes
// the rows' log-sum-exp; attention_grad_probs takes the recomputed scale * q k^T and dcontext
// v^T and leaves the dropped-out probabilities (for dv) and scale * dS (for dq and dk) in their
// places. A row whose scores are all -inf (masked out) has no softmax: its lse is -inf and its
// probabilities NaN, as the unfused softmax gives.

// The sizes both kernels take, in this order (ops/attention.cc): the chunk's first (batch
// entry, head) and the step from one of its entries to the next (one head, or one batch entry),
// its rows (entries * Sq), the
// mask's batch stride (Sq * Sk for [B, Sq, Sk], 0 for [Sq, Sk]) and whether there is one, the
// heads and sequence lengths, the dropout attributes, the team, and the dropout draws' first
// element: a data-parallel rank's probabilities are elements e0.. of the whole batch's
// (StepContext::rank), as on the CPU.
#define ATTENTION_ROWS_PARAMS                                                                   \
  ulong b0, ulong h0, ulong b_step, ulong h_step, ulong rows, ulong mask_stride, uint has_mask, \
      ulong heads, ulong sq, ulong sk, float p, ulong key, uint team, ulong e0

// Whether element |e| of the [B, heads, Sq, Sk] probabilities is kept: the dropout kernel's
// draw (elementwise.cl) for the same element.
DEVICE_FN bool att_keep(float p, ulong seed, ulong step, ulong key, ulong e) {
  return p == 0.0f || uniform01(philox_word(seed, step, key, e)) >= p;
}

// Row rc of a chunk: query i of the chunk's entry rc / Sq, that many steps past its first
// (b0, h0), and bh = b * heads + h.
typedef struct AttRow {
  ulong i, b, h, bh;
} AttRow;

DEVICE_FN AttRow att_row(ulong rc, ulong b0, ulong h0, ulong b_step, ulong h_step, ulong heads,
                         ulong sq) {
  AttRow r;
  r.i = rc % sq;
  const ulong entry = rc / sq;
  r.b = b0 + entry * b_step;
  r.h = h0 + entry * h_step;
  r.bh = r.b * heads + r.h;
  return r;
}

// Scores to probabilities: row r of the chunk's scores |s| ([rows, Sk]) gets the mask added,
// its log-sum-exp into lse[b, h, i], and exp(s - lse), dropped out.
KERNEL attention_probs(buf_t s, ulong so, buf_t mask, ulong mo, buf_t lse, ulong lo,
                       ATTENTION_ROWS_PARAMS, GLOBAL const GpuState* state,
                       LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  const ulong rc = live ? r : 0;
  const AttRow row_of = att_row(rc, b0, h0, b_step, h_step, heads, sq);
  const ulong i = row_of.i, b = row_of.b, bh = row_of.bh;
  GLOBAL float* row = F32(s, so) + rc * sk;
  GLOBAL const float* mask_row = F32(mask, mo) + (has_mask ? b * mask_stride + i * sk : 0);
  float mx = -INFINITY;
  for (ulong j = lane; live && j < sk; j += team) {
    const float x = row[j] + (has_mask ? mask_row[j] : 0.0f);
    row[j] = x;
    mx = x > mx ? x : mx;
  }
  mx = team_max(scratch, mx, team);
  float sum = 0.0f;
  for (ulong j = lane; live && j < sk; j += team) sum += expf(row[j] - mx);
  sum = team_sum(scratch, sum, team);
  const float row_lse = mx == -INFINITY ? -INFINITY : mx + (float)log((acc_t)sum);
  const ulong seed = state->seed, step = state->step, e_row = e0 + (bh * sq + i) * sk;
  const float keep_scale = 1.0f - p;
  for (ulong j = lane; live && j < sk; j += team) {
    const float pt = expf(row[j] - row_lse);
    row[j] = att_keep(p, seed, step, key, e_row + j) ? pt / keep_scale : 0.0f;
  }
  if (live && lane == 0) F32(lse, lo)[bh * sq + i] = row_lse;
}

// The gradient between the products: with s = scale * q k^T and dp = dcontext v^T for row r,
// P = exp(s + mask - lse), D = dcontext_i . context_i, s becomes the dropped-out P and dp
// scale * P * (dropped(dp) - D).
KERNEL attention_grad_probs(buf_t s, ulong so, buf_t dp, ulong dpo, buf_t dcontext, ulong dco,
                            buf_t context, ulong co, buf_t lse, ulong lo, buf_t mask, ulong mo,
                            ulong dv, float scale, ATTENTION_ROWS_PARAMS,
                            GLOBAL const GpuState* state, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  const ulong rc = live ? r : 0;
  const AttRow row_of = att_row(rc, b0, h0, b_step, h_step, heads, sq);
  const ulong i = row_of.i, b = row_of.b, h = row_of.h, bh = row_of.bh;
  GLOBAL float* s_row = F32(s, so) + rc * sk;
  GLOBAL float* dp_row = F32(dp, dpo) + rc * sk;
  GLOBAL const float* mask_row = F32(mask, mo) + (has_mask ? b * mask_stride + i * sk : 0);
  const ulong at = (b * sq + i) * heads * dv + h * dv;
  GLOBAL const float* dc_row = F32(dcontext, dco) + at;
  GLOBAL const float* c_row = F32(context, co) + at;
  float dot = 0.0f;
  for (ulong c = lane; live && c < dv; c += team) dot += dc_row[c] * c_row[c];
  const float row_d = team_sum(scratch, dot, team);
  const float row_lse = F32(lse, lo)[bh * sq + i];
  const ulong seed = state->seed, step = state->step, e_row = e0 + (bh * sq + i) * sk;
  const float keep_scale = 1.0f - p;
  for (ulong j = lane; live && j < sk; j += team) {
    const float pt = expf(s_row[j] + (has_mask ? mask_row[j] : 0.0f) - row_lse);
    const bool kept = att_keep(p, seed, step, key, e_row + j);
    const float dpt = kept ? dp_row[j] / keep_scale : 0.0f;
    dp_row[j] = scale * (pt * (dpt - row_d));
    s_row[j] = kept ? pt / keep_scale : 0.0f;
  }
}
