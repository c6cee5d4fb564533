// The packed GEMM engine of backends/cpu/gemm/gemm.h, compiled once per instruction set: meson
// builds this file with REMAT_CPU_ISA set to baseline, avx2 or avx512 and the matching -m
// flags (isa/build.h), and gemm/gemm.cc picks one at run time.
#include <string.h>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/isa/build.h"
#include "backends/cpu/isa/transposed_blocks.h"

namespace remat {
namespace cpu {
namespace {

// The micro-tile is kMr x (2 vectors), its accumulators held in registers: 8 x 32 with
// AVX-512 (16 of 32 registers), 6 x 16 with AVX (12 of 16), 4 x 8 with SSE (8 of 16).
#if defined(__AVX512F__)
constexpr int64_t kMr = 8;
#elif defined(__AVX__)
constexpr int64_t kMr = 6;
#else
constexpr int64_t kMr = 4;
#endif
constexpr int64_t kNr = 2 * kVec;
static_assert(kGemmMc % kMr == 0 && kGemmNc % kNr == 0, "blocks hold whole micro-tiles");
static_assert(kNr <= kGemmColumnSlack, "a walked row is read at most one tile past its end");

// dst[p * kPanel + i] = m[(row0 + i) * ld + p0 + p], i < count, p < kc: the rows of an operand
// stored along K packed down its panel's columns, a block in registers at a time
// (isa/transposed_blocks.h) where this build has them and the panel is whole blocks wide, else
// element by element.
template <int64_t kPanel>
inline void pack_along_k(const float* m, int64_t ld, int64_t row0, int64_t count, int64_t p0,
                         int64_t kc, float* dst) {
#if REMAT_CPU_TRANSPOSED_BLOCKS
  if constexpr (kPanel % 8 == 0) {
    return transpose_into_columns(m + row0 * ld + p0, ld, count, kc, dst, kPanel, FloatRuns());
  }
#endif
  for (int64_t i = 0; i < count; ++i) {
    const float* src = m + (row0 + i) * ld + p0;
    for (int64_t p = 0; p < kc; ++p) dst[p * kPanel + i] = src[p];
  }
}

// Packs op(A)[i0:i0+mc, p0:p0+kc] as panels of kMr rows, k-major, zero-padded to kMr.
void pack_a(const Gemm& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  for (int64_t ir = 0; ir < mc; ir += kMr) {
    const int64_t mr = mc - ir < kMr ? mc - ir : kMr, row0 = i0 + ir;
    if (mr < kMr) memset(dst, 0, static_cast<size_t>(kc * kMr) * sizeof(float));
    if (g.trans_a) {  // op(A)[i, p] = a[p, i]: each step's rows are adjacent
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = g.a + (p0 + p) * g.lda + row0;
        for (int64_t i = 0; i < mr; ++i) dst[p * kMr + i] = src[i];
      }
    } else {
      pack_along_k<kMr>(g.a, g.lda, row0, mr, p0, kc, dst);
    }
    dst += kc * kMr;
  }
}

// Packs op(B)[p0:p0+kc, j0:j0+nc] as panels of kNr columns, k-major, zero-padded to kNr.
void pack_b(const Gemm& g, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t nr = nc - jr < kNr ? nc - jr : kNr;
    if (g.trans_b) {
      // op(B)[p, j] = b[j, p]: walk each stored row once.
      if (nr < kNr) memset(dst, 0, static_cast<size_t>(kc * kNr) * sizeof(float));
      pack_along_k<kNr>(g.b, g.ldb, j0 + jr, nr, p0, kc, dst);
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        float* d = dst + p * kNr;
        const float* src = g.b + (p0 + p) * g.ldb + j0 + jr;
        memcpy(d, src, static_cast<size_t>(nr) * sizeof(float));
        if (nr < kNr) memset(d + nr, 0, static_cast<size_t>(kNr - nr) * sizeof(float));
      }
    }
    dst += kc * kNr;
  }
}

// Rows of a packed op(B) panel: kNr floats apart.
struct PackedRows {
  const float* row;
  const float* next() {
    const float* r = row;
    row += kNr;
    return r;
  }
};

// Rows of op(B) at offsets from |b| (GemmImages' taps), from row |p0| on.
struct TableRows {
  const float* b;
  const int64_t* offset;
  const float* next() { return b + *offset++; }
};

// Rows of op(B) read in place (GemmRowWalk), from row |p0| of the walk on; |b| includes the
// column offset. The address steps through the walk's three levels without dividing.
struct WalkedRows {
  const float* row;
  int64_t inner, middle;
  const GemmRowWalk* walk;
  int64_t next_middle, next_outer;

  WalkedRows(const float* b, const GemmRowWalk& w, int64_t p0)
      : row(b + p0 / (w.inner * w.middle) * w.outer_step + p0 / w.inner % w.middle * w.middle_step +
            p0 % w.inner * w.inner_step),
        inner(p0 % w.inner),
        middle(p0 / w.inner % w.middle),
        walk(&w),
        next_middle(w.middle_step - (w.inner - 1) * w.inner_step),
        next_outer(w.outer_step - (w.middle - 1) * w.middle_step - (w.inner - 1) * w.inner_step) {}

  const float* next() {
    const float* r = row;
    if (++inner < walk->inner) {
      row += walk->inner_step;
    } else if (inner = 0, ++middle < walk->middle) {
      row += next_middle;
    } else {
      middle = 0;
      row += next_outer;
    }
    return r;
  }
};

// A micro-tile's two vectors of op(B)'s row |b|: its first 2 * kVec floats.
struct ContiguousLoads {
  void operator()(const float* b, vec* b0, vec* b1) const {
    memcpy(b0, b, sizeof(vec));
    memcpy(b1, b + kVec, sizeof(vec));
  }
};

// A micro-tile's two vectors of op(B)'s row |b| in GemmImages mode: kRuns runs each, at the
// offsets of the tile's columns (runs of one output row, so contiguous in the padded image).
template <int kRuns>
struct ImageLoads {
  const int64_t* offset;  // 2 * kRuns
  void operator()(const float* b, vec* b0, vec* b1) const {
    *b0 = load_runs<kVec, kRuns>(b, offset);
    *b1 = load_runs<kVec, kRuns>(b, offset + kRuns);
  }
};

// tile = sum over p of a[p, :]^T b_p, |kc| steps in order, b_p the next of |rows| as |load|
// reads it.
template <typename Rows, typename Loads>
inline void micro_kernel(int64_t kc, const float* a, Rows rows, Loads load, vec acc[kMr][2]) {
  for (int64_t i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = vec{};
  for (int64_t p = 0; p < kc; ++p) {
    vec b0, b1;
    load(rows.next(), &b0, &b1);
#pragma GCC unroll 8
    for (int64_t i = 0; i < kMr; ++i) {
      const float ai = a[p * kMr + i];
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
  }
}

// C[mr x nr] = alpha * tile (overwrite) or C += alpha * tile.
inline void store_tile(const vec acc[kMr][2], float alpha, bool overwrite, int64_t mr, int64_t nr,
                       float* c, int64_t ldc) {
  for (int64_t i = 0; i < mr; ++i) {
    const vec r0 = alpha * acc[i][0], r1 = alpha * acc[i][1];
    float* ci = c + i * ldc;
    if (nr == kNr) {  // A whole row of the tile: vector loads and stores.
      vec c0 = r0, c1 = r1;
      if (!overwrite) {
        memcpy(&c0, ci, sizeof(vec));
        memcpy(&c1, ci + kVec, sizeof(vec));
        c0 += r0;
        c1 += r1;
      }
      memcpy(ci, &c0, sizeof(vec));
      memcpy(ci + kVec, &c1, sizeof(vec));
      continue;
    }
    float row[kNr];
    memcpy(row, &r0, sizeof(vec));
    memcpy(row + kVec, &r1, sizeof(vec));
    if (overwrite) {
      for (int64_t j = 0; j < nr; ++j) ci[j] = row[j];
    } else {
      for (int64_t j = 0; j < nr; ++j) ci[j] += row[j];
    }
  }
}

// Packs op(A)'s block [i0, i0 + mc) x [p0, p0 + kc) into |pa|, with g's packer or pack_a.
void pack_a_block(const Gemm& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* pa) {
  if (g.pack_a_with.pack != nullptr) {
    g.pack_a_with.pack(g.pack_a_with.context, p0, kc, i0, mc, kMr, pa);
  } else {
    pack_a(g, i0, mc, p0, kc, pa);
  }
}

// The GemmImages mode, its columns' runs kVec / kRuns long (Q a multiple of that). op(A)'s
// block is packed once for every image; a micro-tile's columns never leave an image, so an
// image's last tile may be short.
template <int kRuns>
void images_gemm(const Gemm& g) {
  constexpr int64_t kRun = kVec / kRuns;
  const GemmImages& im = g.b_images;
  const int64_t pq = im.p * im.q;
  float* pa = g.pack;
  vec acc[kMr][2];
  for (int64_t p0 = 0; p0 < g.k; p0 += kGemmKc) {
    const int64_t kc = g.k - p0 < kGemmKc ? g.k - p0 : kGemmKc;
    const bool overwrite = p0 == 0 && g.beta == 0.0f;  // as in packed_gemm
    for (int64_t i0 = 0; i0 < g.m; i0 += kGemmMc) {
      const int64_t mc = g.m - i0 < kGemmMc ? g.m - i0 : kGemmMc;
      pack_a_block(g, i0, mc, p0, kc, pa);
      for (int64_t n = 0; n < im.images; ++n) {
        const float* b = g.b + n * im.b_image_step;
        float* c = g.c + n * im.c_image_step + i0 * g.ldc;
        for (int64_t jr = 0; jr < pq; jr += kNr) {
          const int64_t nr = pq - jr < kNr ? pq - jr : kNr;
          // Each run's first column (a run past the image repeats the first, and is dropped).
          int64_t offset[2 * kRuns];
          for (int64_t t = 0; t < 2 * kRuns; ++t) {
            const int64_t j = jr + t * kRun < pq ? jr + t * kRun : jr;
            offset[t] = j / im.q * im.wp + j % im.q;
          }
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            const int64_t mr = mc - ir < kMr ? mc - ir : kMr;
            micro_kernel(kc, pa + ir * kc, TableRows{b, im.tap_offsets + p0},
                         ImageLoads<kRuns>{offset}, acc);
            store_tile(acc, g.alpha, overwrite, mr, nr, c + ir * g.ldc + jr, g.ldc);
          }
        }
      }
    }
  }
}

}  // namespace

void REMAT_CPU_ENTRY(packed_gemm)(const Gemm& g) {
  const bool images = g.b_images.images > 0;
  const int64_t n = images ? g.b_images.images * g.b_images.p * g.b_images.q : g.n;
  if (g.m == 0 || n == 0) return;
  if (g.k == 0) {  // An empty sum: C = beta * C.
    if (g.beta != 0.0f) return;
    for (int64_t i = 0; i < g.m; ++i) {
      if (!images) {
        memset(g.c + i * g.ldc, 0, static_cast<size_t>(g.n) * sizeof(float));
        continue;
      }
      for (int64_t img = 0; img < g.b_images.images; ++img) {
        memset(g.c + img * g.b_images.c_image_step + i * g.ldc, 0,
               static_cast<size_t>(g.b_images.p * g.b_images.q) * sizeof(float));
      }
    }
    return;
  }
  if (images) {
    // The longest runs Q allows: whole vectors, else halves, else quarters (kGemmImageGrain).
    if (g.b_images.q % kVec == 0) return images_gemm<1>(g);
    if constexpr (kVec >= 2 * kGemmImageGrain) {
      if (g.b_images.q % (kVec / 2) == 0) return images_gemm<2>(g);
    }
    if constexpr (kVec >= 4 * kGemmImageGrain) return images_gemm<4>(g);
    return;  // unreachable: Q is a multiple of kGemmImageGrain
  }
  float* pa = g.pack;
  float* pb = g.pack + kGemmMc * kGemmKc;
  vec acc[kMr][2];
  // A walked op(B) has no packed block to bound, so its columns are one block: op(A) is packed
  // once per K block instead of once per kGemmNc columns.
  const bool walk = g.pack_b_with.pack == nullptr && g.b_walk.inner > 0;
  const int64_t column_block = walk ? g.n : kGemmNc;
  for (int64_t j0 = 0; j0 < g.n; j0 += column_block) {
    const int64_t nc = g.n - j0 < column_block ? g.n - j0 : column_block;
    for (int64_t p0 = 0; p0 < g.k; p0 += kGemmKc) {
      const int64_t kc = g.k - p0 < kGemmKc ? g.k - p0 : kGemmKc;
      // The first K block applies beta; later ones accumulate onto it. Every element's sum
      // runs over K in the same blocks whatever M and N are, so a product computed in row or
      // column slices has the bits of the whole.
      const bool overwrite = p0 == 0 && g.beta == 0.0f;
      if (g.pack_b_with.pack != nullptr) {
        g.pack_b_with.pack(g.pack_b_with.context, p0, kc, j0, nc, kNr, pb);
      } else if (!walk) {
        pack_b(g, p0, kc, j0, nc, pb);
      }
      for (int64_t i0 = 0; i0 < g.m; i0 += kGemmMc) {
        const int64_t mc = g.m - i0 < kGemmMc ? g.m - i0 : kGemmMc;
        pack_a_block(g, i0, mc, p0, kc, pa);
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          const int64_t nr = nc - jr < kNr ? nc - jr : kNr;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            const int64_t mr = mc - ir < kMr ? mc - ir : kMr;
            if (walk) {
              micro_kernel(kc, pa + ir * kc, WalkedRows(g.b + j0 + jr, g.b_walk, p0),
                           ContiguousLoads{}, acc);
            } else {
              micro_kernel(kc, pa + ir * kc, PackedRows{pb + jr * kc}, ContiguousLoads{}, acc);
            }
            store_tile(acc, g.alpha, overwrite, mr, nr, g.c + (i0 + ir) * g.ldc + j0 + jr, g.ldc);
          }
        }
      }
    }
  }
}

}  // namespace cpu
}  // namespace remat
