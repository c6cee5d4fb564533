// The GEMM engine of backends/cpu/gemm.h, and the scratch its portable path packs into.
#include "backends/cpu/gemm.h"

#include <string.h>

#include "backends/cpu/kernels.h"

#if REMAT_HAVE_BLAS
#include <cblas.h>
#endif

namespace remat {
namespace cpu {
namespace {

#if REMAT_HAVE_BLAS

void gemm_impl(const Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  // OpenBLAS wants ld >= 1 even for empty operands.
  auto ld = [](int64_t v) { return static_cast<blasint>(v > 0 ? v : 1); };
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
              g.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(g.m),
              static_cast<blasint>(g.n), static_cast<blasint>(g.k), g.alpha, g.a, ld(g.lda), g.b,
              ld(g.ldb), g.beta, g.c, ld(g.ldc));
}

#else  // Portable path: BLIS-style packing and a register-blocked micro-kernel.

// The micro-tile is kMr x (2 vectors) and fits the register file: 12 AVX accumulators, or
// 8 SSE ones without AVX (wider generic vectors than the target has are split into scalars).
#if defined(__AVX__)
typedef float vec __attribute__((vector_size(32)));
constexpr int64_t kMr = 6;
#else
typedef float vec __attribute__((vector_size(16)));
constexpr int64_t kMr = 4;
#endif
constexpr int64_t kVec = sizeof(vec) / sizeof(float);
constexpr int64_t kNr = 2 * kVec;
constexpr int64_t kKc = 256;       // A K-slice of a B micro-panel (kKc x kNr) stays in L1.
constexpr int64_t kMc = kMr * 12;  // The packed A block (kMc x kKc) stays in L2.
constexpr int64_t kNc = 256;       // Packed B block (kKc x kNc) reused by every A block.

// Fixed blocks keep the summation order, hence the bits, independent of everything but the
// shapes. The packing buffers are the backend's scratch, obtained once at session creation:
// a kernel never allocates, and sessions on different threads never share them.
constexpr int64_t kPackA = kMc * kKc;  // floats of the packed A block, then the B block
constexpr int64_t kPackB = kKc * kNc;

// Packs op(A)[i0:i0+mc, p0:p0+kc] as panels of kMr rows, k-major, zero-padded to kMr.
void pack_a(const Gemm& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  for (int64_t ir = 0; ir < mc; ir += kMr) {
    const int64_t mr = mc - ir < kMr ? mc - ir : kMr;
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < kMr; ++i) {
        const int64_t row = i0 + ir + i, col = p0 + p;
        dst[p * kMr + i] =
            i < mr ? (g.trans_a ? g.a[col * g.lda + row] : g.a[row * g.lda + col]) : 0.0f;
      }
    }
    dst += kc * kMr;
  }
}

// Packs op(B)[p0:p0+kc, j0:j0+nc] as panels of kNr columns, k-major, zero-padded to kNr.
void pack_b(const Gemm& g, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t jr = 0; jr < nc; jr += kNr) {
    const int64_t nr = nc - jr < kNr ? nc - jr : kNr;
    for (int64_t p = 0; p < kc; ++p) {
      float* d = dst + p * kNr;
      const int64_t row = p0 + p;
      if (!g.trans_b && nr == kNr) {
        memcpy(d, g.b + row * g.ldb + j0 + jr, kNr * sizeof(float));
        continue;
      }
      for (int64_t j = 0; j < kNr; ++j) {
        const int64_t col = j0 + jr + j;
        d[j] = j < nr ? (g.trans_b ? g.b[col * g.ldb + row] : g.b[row * g.ldb + col]) : 0.0f;
      }
    }
    dst += kc * kNr;
  }
}

// tile = sum_p a[p, :]^T b[p, :] over |kc| packed steps.
void micro_kernel(int64_t kc, const float* a, const float* b, float tile[kMr][kNr]) {
  vec acc[kMr][2];
#pragma GCC unroll 8
  for (int64_t i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = vec{};
  for (int64_t p = 0; p < kc; ++p) {
    vec b0, b1;
    memcpy(&b0, b + p * kNr, sizeof(vec));
    memcpy(&b1, b + p * kNr + kVec, sizeof(vec));
#pragma GCC unroll 8
    for (int64_t i = 0; i < kMr; ++i) {
      const float ai = a[p * kMr + i];
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
  }
#pragma GCC unroll 8
  for (int64_t i = 0; i < kMr; ++i) {
    memcpy(&tile[i][0], &acc[i][0], sizeof(vec));
    memcpy(&tile[i][kVec], &acc[i][1], sizeof(vec));
  }
}

void gemm_impl(const Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // An empty sum: C = beta * C.
    if (g.beta != 0.0f) return;
    for (int64_t i = 0; i < g.m; ++i) {
      memset(g.c + i * g.ldc, 0, static_cast<size_t>(g.n) * sizeof(float));
    }
    return;
  }
  float* pa = g.pack;
  float* pb = g.pack + kPackA;
  float tile[kMr][kNr];
  for (int64_t j0 = 0; j0 < g.n; j0 += kNc) {
    const int64_t nc = g.n - j0 < kNc ? g.n - j0 : kNc;
    for (int64_t p0 = 0; p0 < g.k; p0 += kKc) {
      const int64_t kc = g.k - p0 < kKc ? g.k - p0 : kKc;
      // The first K block applies beta; later ones accumulate onto it.
      const bool overwrite = p0 == 0 && g.beta == 0.0f;
      pack_b(g, p0, kc, j0, nc, pb);
      for (int64_t i0 = 0; i0 < g.m; i0 += kMc) {
        const int64_t mc = g.m - i0 < kMc ? g.m - i0 : kMc;
        pack_a(g, i0, mc, p0, kc, pa);
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          const int64_t nr = nc - jr < kNr ? nc - jr : kNr;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            const int64_t mr = mc - ir < kMr ? mc - ir : kMr;
            micro_kernel(kc, pa + ir * kc, pb + jr * kc, tile);
            float* c = g.c + (i0 + ir) * g.ldc + j0 + jr;
            for (int64_t i = 0; i < mr; ++i) {
              float* ci = c + i * g.ldc;
              if (overwrite) {
                for (int64_t j = 0; j < nr; ++j) ci[j] = g.alpha * tile[i][j];
              } else {
                for (int64_t j = 0; j < nr; ++j) ci[j] += g.alpha * tile[i][j];
              }
            }
          }
        }
      }
    }
  }
}

#endif  // REMAT_HAVE_BLAS

}  // namespace

#if REMAT_HAVE_BLAS
size_t scratch_bytes() { return 0; }  // OpenBLAS keeps its own buffers
#else
size_t scratch_bytes() { return static_cast<size_t>(kPackA + kPackB) * sizeof(float); }
#endif

void gemm(const Gemm& g) { gemm_impl(g); }

}  // namespace cpu
}  // namespace remat
