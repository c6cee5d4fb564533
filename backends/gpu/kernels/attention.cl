// Fused attention and its gradient (plan/op_catalogue.h: attention, attention_grad): the
// scores are recomputed tile by tile, never stored.
//
// Work split. A group serves one (batch b, head h) and a range of LOCAL_SIZE() rows, one work
// item per row: queries in attention and attention_grad_q, keys in attention_grad_kv. The other
// side is walked in tiles of ATT_TILE rows (keys, or queries for attention_grad_kv) staged in
// work-group memory ATT_CHUNK columns at a time, so that D and Dv may be anything and the
// group's memory stays at ATT_TILE * ATT_CHUNK floats (4 KiB; attention_grad_kv adds 2 *
// ATT_TILE). A work item keeps one tile's scores in private arrays of ATT_TILE floats and adds
// a tile's contribution into its own output row in device memory (the first tile writes it):
// every output element has one writer, which adds in key (or query) order, so results do not
// depend on the schedule and no atomics are needed.
//
// attention runs two passes over the keys: the row's log-sum-exp by an online maximum, then
// context = sum_j dropped(exp(s_ij - lse_i)) v_j. The gradient is two kernels: attention_grad_q
// (dq, a work item per query) and attention_grad_kv (dk and dv, a work item per key); both
// form D_i = rowsum(dcontext_i * context_i) in the same order, so they agree on it.
//
// A row whose scores are all -inf (masked out) has no softmax: its lse is -inf and its context
// and gradients NaN, as the unfused softmax gives.

#define ATT_TILE REMAT_GPU_ATTENTION_TILE
#define ATT_CHUNK REMAT_GPU_ATTENTION_CHUNK

// The sizes every attention kernel takes, in this order (ops/attention.cc): the mask's batch
// stride (Sq * Sk for [B, Sq, Sk], 0 for [Sq, Sk]) and whether there is one, the heads and the
// sequence and head widths, the attributes.
#define ATTENTION_PARAMS                                                                     \
  ulong mask_stride, uint has_mask, ulong heads, ulong sq, ulong sk, ulong d, ulong dv,      \
      float scale, float p, ulong key

DEVICE_FN uint att_min(ulong a, uint b) { return a < b ? (uint)a : b; }

// Copies rows r0 .. r0 + ATT_TILE - 1, columns c0 .. c0 + ATT_CHUNK - 1 of a head's matrix
// (row r at |base| + r * |stride|; |n| rows of |width| columns, zeros past them) into |tile|,
// [ATT_TILE][ATT_CHUNK]. Every work item of the group calls it: it waits at barriers before
// (the tile's last readers) and after (its writers).
DEVICE_FN void att_stage(LOCAL_PTR float* tile, GLOBAL const float* base, ulong stride, ulong r0,
                         ulong n, ulong c0, ulong width) {
  LOCAL_BARRIER();
  for (uint t = LOCAL_ID(); t < ATT_TILE * ATT_CHUNK; t += LOCAL_SIZE()) {
    const ulong r = r0 + t / ATT_CHUNK, c = c0 + t % ATT_CHUNK;
    tile[t] = r < n && c < width ? base[r * stride + c] : 0.0f;
  }
  LOCAL_BARRIER();
}

// out[t] = row . (row r0 + t of the head's matrix at |base|) for the tile's rows, the products
// added in column order; |row| has |width| columns. Every work item of the group calls it.
DEVICE_FN void att_dots(float* out, LOCAL_PTR float* tile, GLOBAL const float* row,
                        GLOBAL const float* base, ulong stride, ulong r0, ulong n, ulong width) {
  for (uint t = 0; t < ATT_TILE; ++t) out[t] = 0.0f;
  for (ulong c0 = 0; c0 < width; c0 += ATT_CHUNK) {
    att_stage(tile, base, stride, r0, n, c0, width);
    const uint nc = att_min(width - c0, ATT_CHUNK);
    float x[ATT_CHUNK];
    for (uint c = 0; c < nc; ++c) x[c] = row[c0 + c];
    for (uint t = 0; t < ATT_TILE; ++t) {
      float sum = out[t];
      for (uint c = 0; c < nc; ++c) sum += x[c] * tile[t * ATT_CHUNK + c];
      out[t] = sum;
    }
  }
}

// out_row[c] (+)= sum_t w[t] * (row r0 + t of the head's matrix at |base|)[c] for t < |count|:
// the tile's contribution to the work item's own output row of |width| columns, which the first
// tile (|first|) writes instead of adding to. Every work item of the group calls it; only
// |live| ones write.
DEVICE_FN void att_accumulate(GLOBAL float* out_row, const float* w, uint count, int first,
                              bool live, LOCAL_PTR float* tile, GLOBAL const float* base,
                              ulong stride, ulong r0, ulong n, ulong width) {
  for (ulong c0 = 0; c0 < width; c0 += ATT_CHUNK) {
    att_stage(tile, base, stride, r0, n, c0, width);
    const uint nc = att_min(width - c0, ATT_CHUNK);
    for (uint c = 0; live && c < nc; ++c) {
      float sum = first ? 0.0f : out_row[c0 + c];
      for (uint t = 0; t < count; ++t) sum += w[t] * tile[t * ATT_CHUNK + c];
      out_row[c0 + c] = sum;
    }
  }
}

// Whether element |e| of the [B, heads, Sq, Sk] probabilities is kept: the dropout kernel's
// draw (elementwise.cl) for the same element.
DEVICE_FN bool att_keep(float p, ulong seed, ulong step, ulong key, ulong e) {
  return p == 0.0f || uniform01(philox_word(seed, step, key, e)) >= p;
}

// sum_c a[c] * b[c] over |n| columns, in column order.
DEVICE_FN float att_row_dot(GLOBAL const float* a, GLOBAL const float* b, ulong n) {
  float sum = 0.0f;
  for (ulong c = 0; c < n; ++c) sum += a[c] * b[c];
  return sum;
}

// One work item per query: context and lse.
KERNEL attention(buf_t q, ulong qo, buf_t k, ulong ko, buf_t v, ulong vo, buf_t mask, ulong mo,
                 buf_t context, ulong co, buf_t lse, ulong lo, ATTENTION_PARAMS,
                 GLOBAL const GpuState* state, LOCAL_PARAM(float, tile)) {
  LOCAL_BIND(float, tile);
  const ulong seed = state->seed, step = state->step;
  const ulong tiles = (sq + LOCAL_SIZE() - 1) / LOCAL_SIZE();
  const ulong bh = GROUP_ID() / tiles, b = bh / heads, h = bh % heads;
  const ulong i = (GROUP_ID() % tiles) * LOCAL_SIZE() + LOCAL_ID();
  const bool live = i < sq;
  const ulong ic = live ? i : sq - 1;  // Past the last query: read the last, write nothing.
  GLOBAL const float* q_row = F32(q, qo) + (b * sq + ic) * heads * d + h * d;
  GLOBAL const float* k_head = F32(k, ko) + b * sk * heads * d + h * d;
  GLOBAL const float* v_head = F32(v, vo) + b * sk * heads * dv + h * dv;
  GLOBAL const float* mask_row = F32(mask, mo) + (has_mask ? b * mask_stride + ic * sk : 0);
  GLOBAL float* context_row = F32(context, co) + (b * sq + ic) * heads * dv + h * dv;
  const ulong e_row = (bh * sq + ic) * sk;
  float s[ATT_TILE];
  // Pass 1: the log-sum-exp, rescaling the sum when the maximum grows.
  float mx = -INFINITY, sum = 0.0f;
  for (ulong j0 = 0; j0 < sk; j0 += ATT_TILE) {
    const uint nk = att_min(sk - j0, ATT_TILE);
    att_dots(s, tile, q_row, k_head, heads * d, j0, sk, d);
    float tile_mx = mx;
    for (uint t = 0; t < nk; ++t) {
      s[t] = scale * s[t] + (has_mask ? mask_row[j0 + t] : 0.0f);
      tile_mx = s[t] > tile_mx ? s[t] : tile_mx;
    }
    if (tile_mx == -INFINITY) continue;  // Masked so far: nothing to add.
    if (tile_mx != mx) sum *= expf(mx - tile_mx);
    mx = tile_mx;
    for (uint t = 0; t < nk; ++t) sum += expf(s[t] - mx);
  }
  const float row_lse = mx + (float)log((acc_t)sum);
  // Pass 2: context from the normalised, dropped-out probabilities.
  const float keep_scale = 1.0f - p;
  for (ulong j0 = 0; j0 < sk; j0 += ATT_TILE) {
    const uint nk = att_min(sk - j0, ATT_TILE);
    att_dots(s, tile, q_row, k_head, heads * d, j0, sk, d);
    for (uint t = 0; t < nk; ++t) {
      const float st = scale * s[t] + (has_mask ? mask_row[j0 + t] : 0.0f);
      const float pt = expf(st - row_lse);
      s[t] = att_keep(p, seed, step, key, e_row + j0 + t) ? pt / keep_scale : 0.0f;
    }
    att_accumulate(context_row, s, nk, j0 == 0, live, tile, v_head, heads * dv, j0, sk, dv);
  }
  if (live) F32(lse, lo)[bh * sq + i] = row_lse;
}

// One work item per query: dq = scale * sum_j dS_ij k_j.
KERNEL attention_grad_q(buf_t dcontext, ulong dco, buf_t q, ulong qo, buf_t k, ulong ko, buf_t v,
                        ulong vo, buf_t context, ulong co, buf_t lse, ulong lo, buf_t mask,
                        ulong mo, buf_t dq, ulong dqo, ATTENTION_PARAMS,
                        GLOBAL const GpuState* state, LOCAL_PARAM(float, tile)) {
  LOCAL_BIND(float, tile);
  const ulong seed = state->seed, step = state->step;
  const ulong tiles = (sq + LOCAL_SIZE() - 1) / LOCAL_SIZE();
  const ulong bh = GROUP_ID() / tiles, b = bh / heads, h = bh % heads;
  const ulong i = (GROUP_ID() % tiles) * LOCAL_SIZE() + LOCAL_ID();
  const bool live = i < sq;
  const ulong ic = live ? i : sq - 1;
  GLOBAL const float* q_row = F32(q, qo) + (b * sq + ic) * heads * d + h * d;
  GLOBAL const float* dc_row = F32(dcontext, dco) + (b * sq + ic) * heads * dv + h * dv;
  GLOBAL const float* c_row = F32(context, co) + (b * sq + ic) * heads * dv + h * dv;
  GLOBAL const float* k_head = F32(k, ko) + b * sk * heads * d + h * d;
  GLOBAL const float* v_head = F32(v, vo) + b * sk * heads * dv + h * dv;
  GLOBAL const float* mask_row = F32(mask, mo) + (has_mask ? b * mask_stride + ic * sk : 0);
  GLOBAL float* dq_row = F32(dq, dqo) + (b * sq + ic) * heads * d + h * d;
  const ulong e_row = (bh * sq + ic) * sk;
  const float row_lse = F32(lse, lo)[bh * sq + ic];
  const float row_d = att_row_dot(dc_row, c_row, dv);
  const float keep_scale = 1.0f - p;
  float s[ATT_TILE], dp[ATT_TILE];
  for (ulong j0 = 0; j0 < sk; j0 += ATT_TILE) {
    const uint nk = att_min(sk - j0, ATT_TILE);
    att_dots(s, tile, q_row, k_head, heads * d, j0, sk, d);
    att_dots(dp, tile, dc_row, v_head, heads * dv, j0, sk, dv);
    for (uint t = 0; t < nk; ++t) {
      const float st = scale * s[t] + (has_mask ? mask_row[j0 + t] : 0.0f);
      const float pt = expf(st - row_lse);
      const float dpt =
          att_keep(p, seed, step, key, e_row + j0 + t) ? dp[t] / keep_scale : 0.0f;
      s[t] = scale * (pt * (dpt - row_d));
    }
    att_accumulate(dq_row, s, nk, j0 == 0, live, tile, k_head, heads * d, j0, sk, d);
  }
}

// One work item per key: dk = scale * sum_i dS_ij q_i, dv = sum_i dropped(P_ij) dcontext_i.
// Work-group memory: the staging tile, then the lse and D of the query tile.
KERNEL attention_grad_kv(buf_t dcontext, ulong dco, buf_t q, ulong qo, buf_t k, ulong ko,
                         buf_t v, ulong vo, buf_t context, ulong co, buf_t lse, ulong lo,
                         buf_t mask, ulong mo, buf_t dk, ulong dko, buf_t dvv, ulong dvo,
                         ATTENTION_PARAMS, GLOBAL const GpuState* state,
                         LOCAL_PARAM(float, tile)) {
  LOCAL_BIND(float, tile);
  LOCAL_PTR float* tile_lse = tile + ATT_TILE * ATT_CHUNK;
  LOCAL_PTR float* tile_d = tile_lse + ATT_TILE;
  const ulong seed = state->seed, step = state->step;
  const ulong tiles = (sk + LOCAL_SIZE() - 1) / LOCAL_SIZE();
  const ulong bh = GROUP_ID() / tiles, b = bh / heads, h = bh % heads;
  const ulong j = (GROUP_ID() % tiles) * LOCAL_SIZE() + LOCAL_ID();
  const bool live = j < sk;
  const ulong jc = live ? j : sk - 1;
  GLOBAL const float* k_row = F32(k, ko) + (b * sk + jc) * heads * d + h * d;
  GLOBAL const float* v_row = F32(v, vo) + (b * sk + jc) * heads * dv + h * dv;
  GLOBAL const float* q_head = F32(q, qo) + b * sq * heads * d + h * d;
  GLOBAL const float* dc_head = F32(dcontext, dco) + b * sq * heads * dv + h * dv;
  GLOBAL const float* c_head = F32(context, co) + b * sq * heads * dv + h * dv;
  GLOBAL const float* mask_col = F32(mask, mo) + (has_mask ? b * mask_stride + jc : 0);
  GLOBAL float* dk_row = F32(dk, dko) + (b * sk + jc) * heads * d + h * d;
  GLOBAL float* dv_row = F32(dvv, dvo) + (b * sk + jc) * heads * dv + h * dv;
  const float keep_scale = 1.0f - p;
  float s[ATT_TILE], dp[ATT_TILE];
  for (ulong i0 = 0; i0 < sq; i0 += ATT_TILE) {
    const uint ni = att_min(sq - i0, ATT_TILE);
    LOCAL_BARRIER();  // The previous tile's readers of tile_lse and tile_d are done.
    for (uint t = LOCAL_ID(); t < ni; t += LOCAL_SIZE()) {
      tile_lse[t] = F32(lse, lo)[bh * sq + i0 + t];
      const ulong at = (i0 + t) * heads * dv;
      tile_d[t] = att_row_dot(dc_head + at, c_head + at, dv);
    }
    att_dots(s, tile, k_row, q_head, heads * d, i0, sq, d);  // Its barriers publish tile_d.
    att_dots(dp, tile, v_row, dc_head, heads * dv, i0, sq, dv);
    for (uint t = 0; t < ni; ++t) {
      const ulong row = i0 + t;
      const float st = scale * s[t] + (has_mask ? mask_col[row * sk] : 0.0f);
      const float pt = expf(st - tile_lse[t]);
      const bool kept = att_keep(p, seed, step, key, (bh * sq + row) * sk + jc);
      const float dpt = kept ? dp[t] / keep_scale : 0.0f;
      s[t] = scale * (pt * (dpt - tile_d[t]));
      dp[t] = kept ? pt / keep_scale : 0.0f;
    }
    att_accumulate(dv_row, dp, ni, i0 == 0, live, tile, dc_head, heads * dv, i0, sq, dv);
    att_accumulate(dk_row, s, ni, i0 == 0, live, tile, q_head, heads * d, i0, sq, d);
  }
}
