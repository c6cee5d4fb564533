// Every build of attention's tile loops this CPU runs (backends/cpu/ops/attention_tiles.h), not
// only the one the kernels pick: scores against float64 and the same bits as the baseline build,
// and both sums of weighted rows, on tiles of 1, 15 and 16 rows, of 1, 63 and 64 keys
// (kAttentionKeyTile), and of depths below, at and past kAttentionDepthChunk (64), rows and keys
// strided as q, k and v interleave heads; a tile's transposed keys reused by another call.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <string.h>

#include <vector>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/ops/attention_bf16.h"
#include "backends/cpu/ops/attention_tiles.h"
#include "op_harness.h"
#include "plan/half_float.h"

namespace {

using remat::cpu::AttentionTile;
using remat::cpu::kAttentionKeyTile;

struct Build {
  const char* name;
  void (*scores)(const AttentionTile&, float, float*, bool, float*);
  void (*add_keys)(const AttentionTile&, const float*, int64_t, float*, int64_t);
  void (*add_rows)(const AttentionTile&, const float*, int64_t, float*, int64_t);
};

std::vector<Build> builds() {
  std::vector<Build> out = {{"baseline", remat::cpu::attention_scores_baseline,
                             remat::cpu::attention_add_keys_baseline,
                             remat::cpu::attention_add_rows_baseline}};
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out.push_back({"avx2", remat::cpu::attention_scores_avx2, remat::cpu::attention_add_keys_avx2,
                   remat::cpu::attention_add_rows_avx2});
  }
  if (__builtin_cpu_supports("avx512f")) {
    out.push_back({"avx512", remat::cpu::attention_scores_avx512,
                   remat::cpu::attention_add_keys_avx512, remat::cpu::attention_add_rows_avx512});
  }
#endif
  return out;
}

struct Shape {
  int64_t rows, keys, depth;
};

void near(double got, double want, double tolerance, const char* build, const char* what,
          const Shape& s, int64_t at) {
  if (!(fabs(got - want) <= tolerance * (1.0 + fabs(want)))) {
    fail_msg("%s, %lld rows x %lld keys x depth %lld: %s[%lld] = %.9g, float64 gives %.9g", build,
             static_cast<long long>(s.rows), static_cast<long long>(s.keys),
             static_cast<long long>(s.depth), what, static_cast<long long>(at), got, want);
  }
}

// The outputs of one build on one shape.
struct Outputs {
  std::vector<float> s, y_keys, y_rows;
};

void every_build_matches_float64_and_the_baseline(void**) {
  const Shape shapes[] = {{1, 1, 1},    {15, 63, 7},  {16, 64, 64}, {16, 64, 65},
                          {3, 64, 130}, {16, 1, 129}, {1, 63, 63},  {7, 33, 200}};
  const float scale = 0.375f;
  uint64_t seed = 1;
  for (const Shape& sh : shapes) {
    // Rows and keys 3 depths apart (three heads), one of them used.
    const int64_t ld = 3 * sh.depth;
    ops_test::Rng rng(seed++);
    std::vector<float> a(static_cast<size_t>(sh.rows * ld)), b(static_cast<size_t>(sh.keys * ld));
    for (float& v : a) v = static_cast<float>(rng.uniform(-1, 1));
    for (float& v : b) v = static_cast<float>(rng.uniform(-1, 1));
    // Weights with zeros (skipped) among them, a key tile's row apart.
    std::vector<float> w(static_cast<size_t>(sh.rows * kAttentionKeyTile), 0.0f);
    for (int64_t r = 0; r < sh.rows; ++r) {
      for (int64_t j = 0; j < sh.keys; ++j) {
        w[r * kAttentionKeyTile + j] =
            (r + j) % 4 == 3 ? 0.0f : static_cast<float>(rng.uniform(-1, 1));
      }
    }
    const AttentionTile t{
        a.data() + sh.depth, ld, b.data() + sh.depth, ld, sh.rows, sh.keys, sh.depth};
    std::vector<Outputs> got;
    for (const Build& bd : builds()) {
      Outputs o;
      o.s.assign(static_cast<size_t>(sh.rows * kAttentionKeyTile), 0.0f);
      o.y_keys.assign(a.size(), 0.5f);
      o.y_rows.assign(b.size(), 0.5f);
      std::vector<float> bt(
          static_cast<size_t>(remat::cpu::kAttentionDepthChunk * kAttentionKeyTile));
      bd.scores(t, scale, bt.data(), false, o.s.data());
      if (sh.depth <= remat::cpu::kAttentionDepthChunk) {
        // The keys transposed by the call above serve another: the same bits.
        std::vector<float> again(o.s.size(), 0.0f);
        bd.scores(t, scale, bt.data(), true, again.data());
        for (int64_t r = 0; r < sh.rows; ++r) {
          if (memcmp(&again[r * kAttentionKeyTile], &o.s[r * kAttentionKeyTile],
                     static_cast<size_t>(sh.keys) * sizeof(float)) != 0)
            fail_msg("%s: scores from transposed keys differ", bd.name);
        }
      }
      bd.add_keys(t, w.data(), sh.depth, o.y_keys.data() + sh.depth, ld);
      bd.add_rows(t, w.data(), sh.depth, o.y_rows.data() + sh.depth, ld);
      for (int64_t r = 0; r < sh.rows; ++r) {
        for (int64_t j = 0; j < sh.keys; ++j) {
          double want = 0;
          for (int64_t d = 0; d < sh.depth; ++d)
            want += static_cast<double>(t.a[r * ld + d]) * t.b[j * ld + d];
          near(o.s[r * kAttentionKeyTile + j], scale * want, 1e-5, bd.name, "s", sh,
               r * kAttentionKeyTile + j);
        }
      }
      for (int64_t x = 0; x < static_cast<int64_t>(a.size()); ++x) {
        const int64_t r = x / ld, c = x % ld - sh.depth;
        double want = 0.5;
        if (c >= 0 && c < sh.depth) {
          for (int64_t j = 0; j < sh.keys; ++j)
            want += static_cast<double>(w[r * kAttentionKeyTile + j]) * t.b[j * ld + c];
        }
        near(o.y_keys[x], want, 1e-5, bd.name, "add_keys", sh, x);
      }
      for (int64_t x = 0; x < static_cast<int64_t>(b.size()); ++x) {
        const int64_t j = x / ld, c = x % ld - sh.depth;
        double want = 0.5;
        if (c >= 0 && c < sh.depth) {
          for (int64_t r = 0; r < sh.rows; ++r)
            want += static_cast<double>(w[r * kAttentionKeyTile + j]) * t.a[r * ld + c];
        }
        near(o.y_rows[x], want, 1e-5, bd.name, "add_rows", sh, x);
      }
      got.push_back(o);
    }
    // Every build sums in the same order without multiply-adds: the baseline's bits.
    for (size_t i = 1; i < got.size(); ++i) {
      for (int64_t r = 0; r < sh.rows; ++r) {
        if (memcmp(&got[i].s[r * kAttentionKeyTile], &got[0].s[r * kAttentionKeyTile],
                   static_cast<size_t>(sh.keys) * sizeof(float)) != 0)
          fail_msg("%s: scores differ from the baseline build's", builds()[i].name);
      }
      if (got[i].y_keys != got[0].y_keys || got[i].y_rows != got[0].y_rows)
        fail_msg("%s: weighted sums differ from the baseline build's", builds()[i].name);
    }
  }
}

// The bfloat16 score tiles (ops/attention_bf16.h) on tiles of 1 to 16 rows (below, at and past
// the four rows summed at once), 1 to 64 keys (around a vector of 16 and kAttentionKeyTile), and
// depths odd and even, below, at and past kAttentionBf16DepthPairs pairs (128): the float64 sum
// of the same bfloat16 values' products, within float32 summation over the depth; keys packed by
// one call serve another with the same bits.
void bf16_scores_match_float64(void**) {
#if REMAT_CPU_BF16_GEMM
  if (!remat::cpu::bf16_gemm_avx512_available()) {
    printf("no AVX512-BF16 on this CPU\n");
    skip();
  }
  using remat::cpu::kAttentionBf16DepthPairs;
  const Shape shapes[] = {{1, 1, 1},    {3, 15, 2},    {4, 16, 3},   {5, 17, 64},  {16, 64, 127},
                          {7, 63, 128}, {16, 33, 129}, {2, 64, 256}, {9, 40, 257}, {16, 64, 200}};
  const float scale = 0.375f;
  uint64_t seed = 7;
  for (const Shape& sh : shapes) {
    const int64_t ld = 3 * sh.depth;  // three heads, the second used: odd offsets for odd depths
    ops_test::Rng rng(seed++);
    std::vector<uint16_t> a(static_cast<size_t>(sh.rows * ld)),
        b(static_cast<size_t>(sh.keys * ld));
    for (uint16_t& v : a) v = remat::f32_to_bf16(static_cast<float>(rng.uniform(-1, 1)));
    for (uint16_t& v : b) v = remat::f32_to_bf16(static_cast<float>(rng.uniform(-1, 1)));
    const remat::cpu::AttentionTileBf16 t{
        a.data() + sh.depth, ld, b.data() + sh.depth, ld, sh.rows, sh.keys, sh.depth};
    std::vector<uint32_t> pairs(static_cast<size_t>(kAttentionBf16DepthPairs * kAttentionKeyTile));
    std::vector<float> s(static_cast<size_t>(sh.rows * kAttentionKeyTile), 0.0f);
    remat::cpu::attention_scores_bf16(t, scale, pairs.data(), false, s.data());
    for (int64_t r = 0; r < sh.rows; ++r) {
      for (int64_t j = 0; j < sh.keys; ++j) {
        double want = 0, magnitude = 0;
        for (int64_t d = 0; d < sh.depth; ++d) {
          const double term = static_cast<double>(remat::bf16_to_f32(t.a[r * ld + d])) *
                              remat::bf16_to_f32(t.b[j * ld + d]);
          want += term;
          magnitude += fabs(term);
        }
        // Float32 sums of depth / 2 pairs: at most about depth float32 roundings of the sum.
        const double bound = scale * magnitude * static_cast<double>(sh.depth) * 0x1p-24;
        const double got = s[r * kAttentionKeyTile + j];
        if (!(fabs(got - scale * want) <= bound + 1e-30))
          fail_msg(
              "bf16, %lld rows x %lld keys x depth %lld: s[%lld][%lld] = %.9g, float64 "
              "gives %.9g (bound %.3g)",
              static_cast<long long>(sh.rows), static_cast<long long>(sh.keys),
              static_cast<long long>(sh.depth), static_cast<long long>(r),
              static_cast<long long>(j), got, scale * want, bound);
      }
    }
    if (sh.depth <= 2 * kAttentionBf16DepthPairs) {
      std::vector<float> again(s.size(), 0.0f);
      remat::cpu::attention_scores_bf16(t, scale, pairs.data(), true, again.data());
      for (int64_t r = 0; r < sh.rows; ++r) {
        if (memcmp(&again[r * kAttentionKeyTile], &s[r * kAttentionKeyTile],
                   static_cast<size_t>(sh.keys) * sizeof(float)) != 0)
          fail_msg("bf16: scores from packed keys differ (depth %lld)",
                   static_cast<long long>(sh.depth));
      }
    }
  }
#else
  printf("built without the bfloat16 engines\n");
  skip();
#endif
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_build_matches_float64_and_the_baseline),
      cmocka_unit_test(bf16_scores_match_float64),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
