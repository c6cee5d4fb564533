// Fused attention (plan/op_catalogue.h: attention, attention_grad) as FlashAttention-2 computes
// it (Dao 2023), never storing more scores than one query tile's against one tile of keys.
//
// Tiles: queries kQueryTile (16) at a time against keys kKeyTile (64) at a time, so the k and v
// rows of a key tile are read from cache by every query of the query tile; the tile's scores
// sit on the stack (4 KB; the backward keeps three such tiles). The forward keeps a running max
// and sum per query (online softmax) and accumulates the context in place in its output rows,
// rescaled when the max grows; the backward recomputes P = exp(s - lse) from the forward's
// log-sum-exp and sums dq, dk and dv in their output rows. No allocation, and no scratch but the
// bfloat16 scores' packed keys (below). The loops
// over a tile's depth (scores, dP = dcontext v^T) and over its rows of d or dv floats (context,
// dq, dk, dv) are ops/attention_tiles.h, built per instruction set with the same bits in each.
//
// Threads and determinism: the forward shares out (batch, head, query tile) units and the
// backward (batch, head) units, so each output element (dk and dv sum over every query) is
// written by one thread in a fixed order: the bits do not depend on the thread count.
//
// bfloat16: in a 16-bit plan whose q and k (dcontext and v) are bfloat16, on a CPU with
// AVX512-BF16, the scores (dP) are summed from those bfloat16 values by VDPBF16PS
// (ops/attention_bf16.h; widening.h: attention_reads_bf16), their keys packed in pairs in the
// thread's GEMM packing scratch; everything else is as below, on the widened float32 copies.
//
// Accumulation: scores and dP sum over D and Dv in order, in float; a query's softmax sum and
// D_i = dcontext_i . context_i in double (Accum); context, dq, dk and dv in float, over the keys
// (dq, context) or the queries (dk, dv) in order. Dropout draws the unfused path's Philox words
// (element ((b * heads + h) * Sq + i) * Sk + j of the stream (seed, step, key), in
// philox_group()'s groups of four) and scales kept probabilities by 1 / (1 - p) as dropout does.
#include <math.h>

#include <cmath>

#include "backends/cpu/isa/isa.h"
#include "backends/cpu/isa/lane_sum.h"
#include "backends/cpu/isa/math_span.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/ops/attention_bf16.h"
#include "backends/cpu/ops/attention_tiles.h"
#include "backends/cpu/parallel.h"
#include "plan/philox.h"

namespace remat {
namespace cpu {
namespace {

// Queries and keys of one tile: k and v rows of a key tile are read once per query of the
// query tile from cache; the tile's scores sit on the stack (4 KB).
constexpr int64_t kQueryTile = 16;
constexpr int64_t kKeyTile = kAttentionKeyTile;
// Query tiles of a forward unit: each key tile's transpose of k serves all of them.
constexpr int64_t kQueryGroup = 4;
// Multiply-adds a thread's part should hold at least, to be worth waking a thread for.
constexpr int64_t kUnitWork = 1 << 15;

// The build of ops/attention_tiles.h the CPU runs best, chosen once per op.
struct TileOps {
  void (*scores)(const AttentionTile& t, float scale, float* bt, bool transposed, float* s);
  void (*add_keys)(const AttentionTile& t, const float* w, int64_t dim, float* y, int64_t ldy);
  void (*add_rows)(const AttentionTile& t, const float* w, int64_t dim, float* y, int64_t ldy);
};

TileOps best_tile_ops() {
  return TileOps{REMAT_CPU_BEST(attention_scores), REMAT_CPU_BEST(attention_add_keys),
                 REMAT_CPU_BEST(attention_add_rows)};
}

// The sizes and tensors both kernels read: q, k, v interleaved by heads, the optional mask.
struct Problem {
  int64_t batch, sq, sk, heads, d, dv;
  float scale, p;
  uint64_t seed, step, key;
  // Batch index of this tensor's first row in the whole batch: a data-parallel rank's dropout
  // masks are those of its rows there (StepContext::rank).
  int64_t first_batch = 0;
  const float* q;
  const float* k;
  const float* v;
  const float* mask;  // nullptr, [Sq, Sk] or [B, Sq, Sk]
  bool mask_per_batch;
  // The bfloat16 tensors behind q, k, v and dcontext where the scores and dP read them as they
  // are (KernelArgs::bf16_in, on a CPU with AVX512-BF16), else nullptr.
  const uint16_t* q16 = nullptr;
  const uint16_t* k16 = nullptr;
  const uint16_t* v16 = nullptr;
  const uint16_t* dcontext16 = nullptr;

  // Element offsets of a row of q (or dq), k, v and the context.
  int64_t q_at(int64_t b, int64_t h, int64_t i) const { return ((b * sq + i) * heads + h) * d; }
  int64_t k_at(int64_t b, int64_t h, int64_t j) const { return ((b * sk + j) * heads + h) * d; }
  int64_t v_at(int64_t b, int64_t h, int64_t j) const { return ((b * sk + j) * heads + h) * dv; }
  int64_t o_at(int64_t b, int64_t h, int64_t i) const { return ((b * sq + i) * heads + h) * dv; }

  const float* q_row(int64_t b, int64_t h, int64_t i) const { return q + q_at(b, h, i); }
  const float* k_row(int64_t b, int64_t h, int64_t j) const { return k + k_at(b, h, j); }
  const float* v_row(int64_t b, int64_t h, int64_t j) const { return v + v_at(b, h, j); }
  const float* mask_row(int64_t b, int64_t i) const {
    if (mask == nullptr) return nullptr;
    return mask + ((mask_per_batch ? b * sq : 0) + i) * sk;
  }
};

// |q_at| is q's input index (k and v follow); the mask is input |mask_at| when the op has it.
Problem problem_of(const KernelArgs& args, int q_at, int mask_at) {
  namespace a = attr::attention;
  const TensorRef& q = in_ref(args, q_at);
  const TensorRef& k = in_ref(args, q_at + 1);
  const TensorRef& v = in_ref(args, q_at + 2);
  Problem pr{};
  pr.heads = iattr(*args.call, a::heads);
  if (pr.heads < 1) pr.heads = 1;
  pr.batch = q.dims[0];
  pr.sq = q.dims[1];
  pr.sk = k.dims[1];
  pr.d = q.dims[2] / pr.heads;
  pr.dv = v.dims[2] / pr.heads;
  pr.scale = fattr(*args.call, a::scale);
  pr.p = fattr(*args.call, a::p);
  pr.seed = args.ctx->seed;
  pr.step = args.ctx->step;
  // A chunk of the batch (widening.h) draws as its items do in the whole batch.
  const int64_t whole = args.batch_whole > 0 ? args.batch_whole : pr.batch;
  pr.first_batch = static_cast<int64_t>(args.ctx->rank) * whole + args.batch_first;
  pr.key = static_cast<uint64_t>(iattr(*args.call, a::key));
  pr.q = in_f32(args, q_at);
  pr.k = in_f32(args, q_at + 1);
  pr.v = in_f32(args, q_at + 2);
  if (args.call->num_inputs > mask_at) {
    pr.mask = in_f32(args, mask_at);
    pr.mask_per_batch = in_ref(args, mask_at).rank == 3;
  }
#if REMAT_CPU_BF16_GEMM
  if (bf16_gemm_avx512_available()) {
    pr.q16 = args.bf16_in[q_at];
    pr.k16 = args.bf16_in[q_at + 1];
    pr.v16 = args.bf16_in[q_at + 2];
    if (q_at > 0) pr.dcontext16 = args.bf16_in[0];
  }
#endif
  return pr;
}

// Element |offset| of a bfloat16 tensor that may be absent (nullptr).
const uint16_t* at(const uint16_t* x, int64_t offset) {
  return x != nullptr ? x + offset : nullptr;
}

// Worker |worker|'s two buffers of packed bfloat16 key pairs (kAttentionBf16DepthPairs x kKeyTile
// words each) where |pr| reads bfloat16: its GEMM packing scratch, which attention does not
// otherwise use; nullptr where it does not.
uint32_t* key_pairs(const KernelArgs& args, const Problem& pr, uint32_t worker) {
#if REMAT_CPU_BF16_GEMM
  static_assert(2 * kAttentionBf16DepthPairs * kKeyTile <= kGemmPackFloats,
                "attention's key pairs fit a thread's packing scratch");
#endif
  if (pr.q16 == nullptr && pr.k16 == nullptr && pr.v16 == nullptr) return nullptr;
  return static_cast<uint32_t*>(args.scratch) + static_cast<int64_t>(worker) * kGemmPackFloats;
}

// s[r * kKeyTile + jj] = scale * a_r . b_j for rows r < rows of |a| (f32, or |a16| bfloat16 where
// both it and |b16| are set) against keys j < n of |b|, rows lda and keys ldb elements apart;
// |bt| (f32) or |pairs| (bfloat16) hold the keys' transpose and |packed| says it is there already.
void tile_scores(const TileOps& ops, const float* a, const uint16_t* a16, int64_t lda,
                 const float* b, const uint16_t* b16, int64_t ldb, int64_t rows, int64_t n,
                 int64_t depth, float scale, float* bt, uint32_t* pairs, bool packed, float* s) {
#if REMAT_CPU_BF16_GEMM
  if (a16 != nullptr && b16 != nullptr) {
    attention_scores_bf16(AttentionTileBf16{a16, lda, b16, ldb, rows, n, depth}, scale, pairs,
                          packed && depth <= 2 * kAttentionBf16DepthPairs, s);
    return;
  }
#else
  (void)a16, (void)b16, (void)pairs;
#endif
  ops.scores(AttentionTile{a, lda, b, ldb, rows, n, depth}, scale, bt,
             packed && depth <= kAttentionDepthChunk, s);
}

// Whether dropout keeps the scores of one query row, element by element: the Philox group of
// four elements is drawn once and reused while the walk stays inside it.
class KeepWalk {
 public:
  KeepWalk(const Problem& pr, int64_t b, int64_t h, int64_t i)
      : pr_(pr),
        base_(static_cast<uint64_t>((((pr.first_batch + b) * pr.heads + h) * pr.sq + i) * pr.sk)) {}
  bool keep(int64_t j) {
    const uint64_t e = base_ + static_cast<uint64_t>(j);
    if ((e >> 2) != group_) {
      group_ = e >> 2;
      words_ = philox_group(pr_.seed, pr_.step, pr_.key, e & ~uint64_t{3});
    }
    return uniform01(words_.v[e & 3]) >= pr_.p;
  }

 private:
  const Problem& pr_;
  uint64_t base_;
  uint64_t group_ = ~uint64_t{0};
  Philox4 words_{};
};

// s[r * kKeyTile + jj] = scale * q_i . k_j (+ mask[i, j]) for queries i = i0 + r, r < rows,
// and keys j = j0 + jj, jj < n; |bt|, |pairs| and |packed| as tile_scores() takes them.
void scores(const Problem& pr, const TileOps& ops, int64_t b, int64_t h, int64_t i0, int64_t rows,
            int64_t j0, int64_t n, float* bt, uint32_t* pairs, bool packed, float* s) {
  const int64_t i = pr.q_at(b, h, i0), j = pr.k_at(b, h, j0);
  tile_scores(ops, pr.q + i, at(pr.q16, i), pr.heads * pr.d, pr.k + j, at(pr.k16, j),
              pr.heads * pr.d, rows, n, pr.d, pr.scale, bt, pairs, packed, s);
  for (int64_t r = 0; r < rows; ++r) {
    if (const float* m = pr.mask_row(b, i0 + r)) {
      float* sr = s + r * kKeyTile;
      for (int64_t jj = 0; jj < n; ++jj) sr[jj] += m[j0 + jj];
    }
  }
}

// The largest of |from| and the non-NaN x[0 .. n - 1], in eight lanes the compiler vectorises
// (one after another, the compares would wait on each other); of equal zeros, either.
inline float max_of(const float* x, int64_t n, float from) {
  float lane[8] = {from, from, from, from, from, from, from, from};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) lane[l] = x[j + l] > lane[l] ? x[j + l] : lane[l];
  }
  for (int l = 0; j + l < n; ++l) lane[l] = x[j + l] > lane[l] ? x[j + l] : lane[l];
  float mx = lane[0];
  for (int l = 1; l < 8; ++l) mx = lane[l] > mx ? lane[l] : mx;
  return mx;
}

// Work of one query against every key, for parallel_for's grain.
int64_t grain_for(const Problem& pr, int64_t rows_per_unit) {
  const int64_t work = rows_per_unit * pr.sk * (pr.d + pr.dv);
  return work >= kUnitWork ? 1 : kUnitWork / (work > 0 ? work : 1);
}

// The context and lse of queries i0 .. i0 + rows - 1 (rows <= kQueryTile * kQueryGroup) of batch
// |b|, head |h|: an online softmax over the keys, kKeyTile at a time, accumulating in the
// context's rows, a query tile at a time against each key tile. |drop_scale| is 1 - p where
// dropout runs, else 1.
void forward_unit(const Problem& pr, const TileOps& ops, int64_t b, int64_t h, int64_t i0,
                  int64_t rows, Accum drop_scale, uint32_t* pairs, float* __restrict context,
                  float* __restrict lse) {
  alignas(64) float s[kQueryTile * kKeyTile];
  alignas(64) float kt[kAttentionDepthChunk * kKeyTile];
  float row_max[kQueryTile * kQueryGroup];
  Accum row_sum[kQueryTile * kQueryGroup];
  const int64_t ldo = pr.heads * pr.dv;
  float* const o0 = context + pr.o_at(b, h, i0);
  for (int64_t r = 0; r < rows; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0;
    float* o = o0 + r * ldo;
    for (int64_t c = 0; c < pr.dv; ++c) o[c] = 0.0f;
  }
  // Key tiles outside, queries inside: a tile of k and v (and k's transpose) serves every query
  // of the unit.
  for (int64_t j0 = 0; j0 < pr.sk; j0 += kKeyTile) {
    const int64_t n = pr.sk - j0 < kKeyTile ? pr.sk - j0 : kKeyTile;
    for (int64_t g0 = 0; g0 < rows; g0 += kQueryTile) {
      const int64_t tile_rows = rows - g0 < kQueryTile ? rows - g0 : kQueryTile;
      scores(pr, ops, b, h, i0 + g0, tile_rows, j0, n, kt, pairs, g0 > 0, s);
      for (int64_t r = 0; r < tile_rows; ++r) {
        const int64_t q = g0 + r;
        float* sr = s + r * kKeyTile;
        const float mx = max_of(sr, n, row_max[q]);
        // Every score so far -inf (masked) or NaN: nothing to add yet (weights 0 are skipped).
        if (mx == -INFINITY) {
          for (int64_t jj = 0; jj < n; ++jj) sr[jj] = 0.0f;
          continue;
        }
        if (mx > row_max[q] && row_sum[q] != 0) {
          const float corr = expf(row_max[q] - mx);
          row_sum[q] *= corr;
          float* o = o0 + q * ldo;
          for (int64_t c = 0; c < pr.dv; ++c) o[c] *= corr;
        }
        row_max[q] = mx;
        exp_shifted_span(sr, mx, sr, n);
        row_sum[q] += lane_sum(n, [&](int64_t jj) { return static_cast<Accum>(sr[jj]); });
        if (pr.p > 0.0f) {
          KeepWalk walk(pr, b, h, i0 + q);
          for (int64_t jj = 0; jj < n; ++jj) {
            if (sr[jj] != 0.0f && !walk.keep(j0 + jj)) sr[jj] = 0.0f;
          }
        }
      }
      const AttentionTile tv{nullptr, 0, pr.v_row(b, h, j0), ldo, tile_rows, n, 0};
      ops.add_keys(tv, s, pr.dv, o0 + g0 * ldo, ldo);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    // A row of only -inf scores has sum 0: its context is 0 * inf = NaN and its lse -inf, as
    // the unfused softmax gives NaN there.
    const float inv = static_cast<float>(Accum(1) / (row_sum[r] * drop_scale));
    float* o = o0 + r * ldo;
    for (int64_t c = 0; c < pr.dv; ++c) o[c] *= inv;
    lse[(b * pr.heads + h) * pr.sq + i0 + r] =
        static_cast<float>(static_cast<Accum>(row_max[r]) + std::log(row_sum[r]));
  }
}

// The gradient tensors attention_grad reads and writes.
struct GradTensors {
  const float* dcontext;
  const float* context;
  const float* lse;
  float* dq;
  float* dk;
  float* dv;
};

// dq, dk and dv of batch |b|, head |h|, overwritten: queries kQueryTile at a time, keys
// kKeyTile at a time inside, P recomputed from lse; every sum into dq, dk, dv runs in float,
// dv_j and dk_j over the queries in order, dq_i over the keys in order.
void backward_unit(const Problem& pr, const TileOps& ops, int64_t b, int64_t h, uint32_t* pairs,
                   const GradTensors& t) {
  const float keep_scale = 1.0f - pr.p;
  alignas(64) float prob[kQueryTile * kKeyTile];
  alignas(64) float dpd[kQueryTile * kKeyTile];
  alignas(64) float ds[kQueryTile * kKeyTile];
  alignas(64) float kt[kAttentionDepthChunk * kKeyTile];
  alignas(64) float vt[kAttentionDepthChunk * kKeyTile];
  float delta[kQueryTile];
  const int64_t ldq = pr.heads * pr.d, ldv = pr.heads * pr.dv;
  uint32_t* const k_pairs = pairs;
  uint32_t* const v_pairs =
      pairs != nullptr ? pairs + kAttentionBf16DepthPairs * kKeyTile : nullptr;
  auto q_side = [&](float* x, int64_t i) { return x + pr.q_at(b, h, i); };
  auto k_side = [&](float* x, int64_t j) { return x + pr.k_at(b, h, j); };
  auto v_side = [&](float* x, int64_t j) { return x + pr.v_at(b, h, j); };
  auto o_side = [&](const float* x, int64_t i) { return x + pr.o_at(b, h, i); };
  for (int64_t i = 0; i < pr.sq; ++i) {
    float* dqi = q_side(t.dq, i);
    for (int64_t c = 0; c < pr.d; ++c) dqi[c] = 0.0f;
  }
  for (int64_t j = 0; j < pr.sk; ++j) {
    float* dkj = k_side(t.dk, j);
    float* dvj = v_side(t.dv, j);
    for (int64_t c = 0; c < pr.d; ++c) dkj[c] = 0.0f;
    for (int64_t c = 0; c < pr.dv; ++c) dvj[c] = 0.0f;
  }
  // Key tiles outside, so that a key tile's transposes of k and v serve every query tile; each
  // sum still runs over the keys (dq) or the queries (dk, dv) in order.
  for (int64_t j0 = 0; j0 < pr.sk; j0 += kKeyTile) {
    const int64_t n = pr.sk - j0 < kKeyTile ? pr.sk - j0 : kKeyTile;
    for (int64_t i0 = 0; i0 < pr.sq; i0 += kQueryTile) {
      const int64_t rows = pr.sq - i0 < kQueryTile ? pr.sq - i0 : kQueryTile;
      // D_i = dcontext_i . context_i, in double (Accum).
      for (int64_t r = 0; r < rows; ++r) {
        const float* go = o_side(t.dcontext, i0 + r);
        const float* o = o_side(t.context, i0 + r);
        delta[r] = static_cast<float>(
            lane_sum(pr.dv, [&](int64_t c) { return static_cast<Accum>(go[c]) * o[c]; }));
      }
      scores(pr, ops, b, h, i0, rows, j0, n, kt, k_pairs, i0 > 0, prob);
      const int64_t o = pr.o_at(b, h, i0), v = pr.v_at(b, h, j0);
      tile_scores(ops, t.dcontext + o, at(pr.dcontext16, o), ldv, pr.v + v, at(pr.v16, v), ldv,
                  rows, n, pr.dv, 1.0f, vt, v_pairs, i0 > 0, dpd);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float* pr_row = prob + r * kKeyTile;
        const float* dpd_row = dpd + r * kKeyTile;
        float* ds_row = ds + r * kKeyTile;
        exp_shifted_span(pr_row, t.lse[(b * pr.heads + h) * pr.sq + i], pr_row, n);
        if (pr.p == 0.0f) {
          // Without dropout every key is kept and 1 - p is 1: dp = dpd and prob stays dv's
          // weights, the bits of the loop below, in a loop the compiler vectorises.
          const float dr = delta[r];
          for (int64_t jj = 0; jj < n; ++jj) {
            const float pij = pr_row[jj];
            ds_row[jj] = pij == 0.0f ? 0.0f : pr.scale * (pij * (dpd_row[jj] - dr));
          }
          continue;
        }
        KeepWalk walk(pr, b, h, i);
        for (int64_t jj = 0; jj < n; ++jj) {
          const float pij = pr_row[jj];
          // A masked key (P = 0) adds nothing to any gradient: weights 0 are skipped.
          if (pij == 0.0f) {
            ds_row[jj] = 0.0f;
            continue;
          }
          const bool keep = pr.p <= 0.0f || walk.keep(j0 + jj);
          // As dropout_grad: kept elements divided by 1 - p, dropped ones times 0.
          const float dp = keep ? dpd_row[jj] / keep_scale : dpd_row[jj] * 0.0f;
          ds_row[jj] = pr.scale * (pij * (dp - delta[r]));
          // prob becomes dv's weights: kept probabilities over 1 - p.
          pr_row[jj] = keep ? pij / keep_scale : 0.0f;
        }
      }
      const AttentionTile dv_tile{o_side(t.dcontext, i0), ldv, nullptr, 0, rows, n, 0};
      ops.add_rows(dv_tile, prob, pr.dv, v_side(t.dv, j0), ldv);
      const AttentionTile dq_tile{nullptr, 0, pr.k_row(b, h, j0), ldq, rows, n, 0};
      ops.add_keys(dq_tile, ds, pr.d, q_side(t.dq, i0), ldq);
      const AttentionTile dk_tile{pr.q_row(b, h, i0), ldq, nullptr, 0, rows, n, 0};
      ops.add_rows(dk_tile, ds, pr.d, k_side(t.dk, j0), ldq);
    }
  }
}

}  // namespace

remat_status attention(const KernelArgs& args) {
  const Problem pr = problem_of(args, 0, 3);
  float* __restrict context = out_f32(args, 0);
  float* __restrict lse = out_f32(args, 1);
  constexpr int64_t kUnitRows = kQueryTile * kQueryGroup;
  const int64_t tiles = (pr.sq + kUnitRows - 1) / kUnitRows;
  // The kept probabilities' factor 1 / (1 - p), with keep_scale = 1 - p as dropout computes it,
  // folded into the final 1 / sum.
  const float keep_scale = 1.0f - pr.p;
  const Accum drop_scale = pr.p > 0.0f ? static_cast<Accum>(keep_scale) : Accum(1);
  const TileOps ops = best_tile_ops();
  parallel_for(args, pr.batch * pr.heads * tiles, grain_for(pr, kUnitRows),
               [&](int64_t begin, int64_t end, uint32_t worker) {
                 for (int64_t unit = begin; unit < end; ++unit) {
                   const int64_t bh = unit / tiles, i0 = unit % tiles * kUnitRows;
                   const int64_t rows = pr.sq - i0 < kUnitRows ? pr.sq - i0 : kUnitRows;
                   forward_unit(pr, ops, bh / pr.heads, bh % pr.heads, i0, rows, drop_scale,
                                key_pairs(args, pr, worker), context, lse);
                 }
               });
  return REMAT_OK;
}

remat_status attention_grad(const KernelArgs& args) {
  const Problem pr = problem_of(args, 1, 6);
  const GradTensors t{in_f32(args, 0),  in_f32(args, 4),  in_f32(args, 5),
                      out_f32(args, 0), out_f32(args, 1), out_f32(args, 2)};
  const TileOps ops = best_tile_ops();
  parallel_for(args, pr.batch * pr.heads, grain_for(pr, pr.sq),
               [&](int64_t begin, int64_t end, uint32_t worker) {
                 for (int64_t bh = begin; bh < end; ++bh) {
                   backward_unit(pr, ops, bh / pr.heads, bh % pr.heads, key_pairs(args, pr, worker),
                                 t);
                 }
               });
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
