// The dot-product engine of backends/cpu/gemm/gemm.h, compiled once per instruction set like
// gemm/packed.cc (REMAT_CPU_ISA and the matching -m flags; gemm/gemm.cc picks one at run time).
// Both operands are read in place along K, so nothing is packed: each element of C is the
// horizontal sum of one vector of partial sums per lane, and a micro-tile of kMr rows of A by
// kNr rows of B keeps its kMr * kNr vectors in registers.
#include <string.h>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/isa/build.h"

namespace remat {
namespace cpu {
namespace {

// 4 x 6 accumulators with AVX-512 (24 of 32 registers, 4 for A, 1 for B), 3 x 4 with AVX and
// SSE (12 of 16, 3 for A, 1 for B; the mask is an operand from memory).
#if defined(__AVX512F__)
constexpr int kMr = 4, kNr = 6;
#else
constexpr int kMr = 3, kNr = 4;
#endif
static_assert(kGemmDotLanes % kVec == 0, "K is read in whole vectors up to kGemmDotLanes");

// Sums the lanes of |v| in a fixed tree: the upper half onto the lower, then its upper
// quarter, down to one lane. Shuffles, not stores: an accumulator whose address is taken
// leaves its register.
typedef float vec4 __attribute__((vector_size(16)));
inline float lane_sum(vec v) {
#if defined(__AVX512F__)
  typedef float vec8 __attribute__((vector_size(32)));
  const vec8 v8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                  __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const vec4 v4 =
      __builtin_shufflevector(v8, v8, 0, 1, 2, 3) + __builtin_shufflevector(v8, v8, 4, 5, 6, 7);
#elif defined(__AVX__)
  const vec4 v4 =
      __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
#else
  const vec4 v4 = v;
#endif
  return (v4[0] + v4[2]) + (v4[1] + v4[3]);
}

// Zeroes a tile's accumulators.
template <int Mr, int Nr>
inline void zero_tile(vec acc[Mr][Nr]) {
#pragma GCC unroll 8
  for (int i = 0; i < Mr; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < Nr; ++j) acc[i][j] = vec{};
  }
}

// out[i][j] = the lane sum of acc[i][j].
template <int Mr, int Nr>
inline void sum_lanes(const vec acc[Mr][Nr], float out[kMr][kNr]) {
#pragma GCC unroll 8
  for (int i = 0; i < Mr; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < Nr; ++j) out[i][j] = lane_sum(acc[i][j]);
  }
}

// out[i][j] = sum over the |k| columns (|k| a multiple of kVec) of a[i][p] * b[j][p] where
// keep[p] is all ones. B is masked, not A: a kept column of A times a dropped inf of B would
// be NaN, and A is finite wherever keep is 0 (GemmDot's contract).
template <int Mr, int Nr>
void dot_tile(int64_t k, const float* const* a, const float* const* b, const int32_t* keep,
              float out[kMr][kNr]) {
  // Every loop over the tile unrolled, so that the accumulators and row pointers stay in
  // registers.
  const float* ar[Mr];
  const float* br[Nr];
#pragma GCC unroll 8
  for (int i = 0; i < Mr; ++i) ar[i] = a[i];
#pragma GCC unroll 8
  for (int j = 0; j < Nr; ++j) br[j] = b[j];
  vec acc[Mr][Nr];
  zero_tile<Mr, Nr>(acc);
  for (int64_t p = 0; p < k; p += kVec) {
    ivec mask;
    memcpy(&mask, keep + p, sizeof(ivec));
    vec av[Mr];
#pragma GCC unroll 8
    for (int i = 0; i < Mr; ++i) memcpy(&av[i], ar[i] + p, sizeof(vec));
#pragma GCC unroll 8
    for (int j = 0; j < Nr; ++j) {
      vec bv;
      memcpy(&bv, br[j] + p, sizeof(vec));
      bv = reinterpret_cast<vec>(reinterpret_cast<ivec>(bv) & mask);
#pragma GCC unroll 8
      for (int i = 0; i < Mr; ++i) acc[i][j] += av[i] * bv;
    }
  }
  sum_lanes<Mr, Nr>(acc, out);
}

// dot_tile over GemmDot::Images, its K the images' output positions, loaded from B in runs of
// kVec / kRuns along an output row (load_runs) and from A whole: nothing is masked.
template <int Mr, int Nr, int kRuns>
void dot_tile_images(const GemmDot::Images& im, const float* const* a, const float* const* b,
                     float out[kMr][kNr]) {
  constexpr int64_t kRun = kVec / kRuns;
  const int64_t pq = im.p * im.q, runs_per_row = im.q / kRun, row_jump = im.wp - im.q;
  vec acc[Mr][Nr];
  zero_tile<Mr, Nr>(acc);
  for (int64_t n = 0; n < im.images; ++n) {
    const float* ar[Mr];
    const float* br[Nr];
#pragma GCC unroll 8
    for (int i = 0; i < Mr; ++i) ar[i] = a[i] + n * im.a_image_step;
#pragma GCC unroll 8
    for (int j = 0; j < Nr; ++j) br[j] = b[j] + n * im.b_image_step;
    // The next run's offset in the padded image, and its place along the output row.
    int64_t next = 0, along = 0;
    for (int64_t p = 0; p < pq; p += kVec) {
      int64_t offset[kRuns];
#pragma GCC unroll 4
      for (int t = 0; t < kRuns; ++t) {
        offset[t] = next;
        next += kRun;
        if (++along == runs_per_row) along = 0, next += row_jump;
      }
      vec av[Mr];
#pragma GCC unroll 8
      for (int i = 0; i < Mr; ++i) memcpy(&av[i], ar[i] + p, sizeof(vec));
#pragma GCC unroll 8
      for (int j = 0; j < Nr; ++j) {
        const vec bv = load_runs<kVec, kRuns>(br[j], offset);
#pragma GCC unroll 8
        for (int i = 0; i < Mr; ++i) acc[i][j] += av[i] * bv;
      }
    }
  }
  sum_lanes<Mr, Nr>(acc, out);
}

using DotTile = void (*)(int64_t, const float* const*, const float* const*, const int32_t*,
                         float[kMr][kNr]);
using DotImageTile = void (*)(const GemmDot::Images&, const float* const*, const float* const*,
                              float[kMr][kNr]);

// dot_tile<mr, nr> for every edge tile, indexed [mr - 1][nr - 1].
template <int Mr, int... Nr>
struct TileRow {
  static constexpr DotTile row[sizeof...(Nr)] = {dot_tile<Mr, Nr>...};
};
template <int Mr, int... Nr>
constexpr DotTile TileRow<Mr, Nr...>::row[sizeof...(Nr)];

// dot_tile_images<mr, nr, kRuns> likewise.
template <int kRuns, int Mr, int... Nr>
struct ImageTileRow {
  static constexpr DotImageTile row[sizeof...(Nr)] = {dot_tile_images<Mr, Nr, kRuns>...};
};
template <int kRuns, int Mr, int... Nr>
constexpr DotImageTile ImageTileRow<kRuns, Mr, Nr...>::row[sizeof...(Nr)];

#if defined(__AVX512F__)
DotTile tile_for(int mr, int nr) {
  switch (mr) {
    case 4: return TileRow<4, 1, 2, 3, 4, 5, 6>::row[nr - 1];
    case 3: return TileRow<3, 1, 2, 3, 4, 5, 6>::row[nr - 1];
    case 2: return TileRow<2, 1, 2, 3, 4, 5, 6>::row[nr - 1];
    default: return TileRow<1, 1, 2, 3, 4, 5, 6>::row[nr - 1];
  }
}
template <int kRuns>
DotImageTile image_tile_for(int mr, int nr) {
  switch (mr) {
    case 4: return ImageTileRow<kRuns, 4, 1, 2, 3, 4, 5, 6>::row[nr - 1];
    case 3: return ImageTileRow<kRuns, 3, 1, 2, 3, 4, 5, 6>::row[nr - 1];
    case 2: return ImageTileRow<kRuns, 2, 1, 2, 3, 4, 5, 6>::row[nr - 1];
    default: return ImageTileRow<kRuns, 1, 1, 2, 3, 4, 5, 6>::row[nr - 1];
  }
}
#else
DotTile tile_for(int mr, int nr) {
  switch (mr) {
    case 3: return TileRow<3, 1, 2, 3, 4>::row[nr - 1];
    case 2: return TileRow<2, 1, 2, 3, 4>::row[nr - 1];
    default: return TileRow<1, 1, 2, 3, 4>::row[nr - 1];
  }
}
template <int kRuns>
DotImageTile image_tile_for(int mr, int nr) {
  switch (mr) {
    case 3: return ImageTileRow<kRuns, 3, 1, 2, 3, 4>::row[nr - 1];
    case 2: return ImageTileRow<kRuns, 2, 1, 2, 3, 4>::row[nr - 1];
    default: return ImageTileRow<kRuns, 1, 1, 2, 3, 4>::row[nr - 1];
  }
}
#endif

// The image tile for Q: the longest runs it allows, whole vectors, else halves, else quarters
// (Q is a multiple of kGemmImageGrain).
DotImageTile image_tile(int64_t q, int mr, int nr) {
  if (q % kVec == 0) return image_tile_for<1>(mr, nr);
  if constexpr (kVec >= 2 * kGemmImageGrain) {
    if (q % (kVec / 2) == 0) return image_tile_for<2>(mr, nr);
  }
  if constexpr (kVec >= 4 * kGemmImageGrain) return image_tile_for<4>(mr, nr);
  return nullptr;  // unreachable: Q is a multiple of kGemmImageGrain
}

// Row |row| of B: GemmRowWalk's three levels.
const float* b_row(const GemmDot& g, int64_t row) {
  const GemmRowWalk& w = g.b_walk;
  return g.b + row / (w.inner * w.middle) * w.outer_step +
         row / w.inner % w.middle * w.middle_step + row % w.inner * w.inner_step;
}

}  // namespace

void REMAT_CPU_ENTRY(dot_gemm)(const GemmDot& g) {
  const int64_t k = (g.k + kGemmDotLanes - 1) / kGemmDotLanes * kGemmDotLanes;
  float out[kMr][kNr];
  const float* a[kMr];
  const float* b[kNr];
  for (int64_t j0 = 0; j0 < g.n; j0 += kNr) {
    const int nr = g.n - j0 < kNr ? static_cast<int>(g.n - j0) : kNr;
    for (int j = 0; j < nr; ++j) {
      b[j] = g.images.images > 0 ? g.b + g.images.tap_offsets[g.b_row0 + j0 + j]
                                 : b_row(g, g.b_row0 + j0 + j);
    }
    for (int64_t i0 = 0; i0 < g.m; i0 += kMr) {
      const int mr = g.m - i0 < kMr ? static_cast<int>(g.m - i0) : kMr;
      for (int i = 0; i < mr; ++i) a[i] = g.a + (i0 + i) * g.lda;
      if (g.images.images > 0) {
        image_tile(g.images.q, mr, nr)(g.images, a, b, out);
      } else {
        tile_for(mr, nr)(k, a, b, g.keep, out);
      }
      for (int i = 0; i < mr; ++i) {
        float* c = g.c + (i0 + i) * g.ldc + j0;
        for (int j = 0; j < nr; ++j) c[j] = g.accumulate ? c[j] + out[i][j] : out[i][j];
      }
    }
  }
}

}  // namespace cpu
}  // namespace remat
