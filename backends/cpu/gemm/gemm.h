// The CPU backend's matrix products. gemm() is the matmul ops' engine: OpenBLAS's cblas_sgemm
// where the build has it (on the calling thread: the matmul kernel spreads blocks of C over the
// backend's threads) and its kernels are as wide as the packed engine's, else the packed engine.
// packed_gemm() is the project's own packed engine (BLIS-style blocking, a register-blocked
// micro-kernel for the widest instruction set the CPU has) that the convolutions call from every
// thread of the backend at once, each on its own slice: OpenBLAS serialises concurrent threaded
// calls. dot_gemm() is the product of two operands that both run along K in memory (a convolution's
// weight gradient sums over the positions, contiguous in dy and in the image alike), read in
// place without packing.
#ifndef REMAT_BACKENDS_CPU_GEMM_GEMM_H_
#define REMAT_BACKENDS_CPU_GEMM_GEMM_H_

#include <stdint.h>

#include "backends/cpu/isa/isa.h"

namespace remat {
namespace cpu {

/// Packs an operand the packed engine would otherwise read from memory, so that a caller can
/// build it while it is packed (the convolutions' implicit im2col). Writes op(M)[k0:k0+kc,
/// x0:x0+xc], x being op(A)'s rows or op(B)'s columns, as panels of |panel| along x, each
/// k-major and the last zero-padded: element (k, x) goes to dst[(x - x0) / panel * kc * panel
/// + (k - k0) * panel + (x - x0) % panel].
struct GemmPacker {
  void (*pack)(const void* context, int64_t k0, int64_t kc, int64_t x0, int64_t xc, int64_t panel,
               float* dst);
  const void* context;  ///< passed to pack
};

/// op(B) read in place, for a stride-1 convolution over a zero-padded image (its taps are rows
/// at fixed offsets from each position): row p = (outer * middle + m) * inner + i of op(B) starts
/// at b + outer * outer_step + m * middle_step + i * inner_step, and its columns are contiguous.
/// The engine reads up to kGemmColumnSlack floats past a row's column n (and drops what it
/// computes from them), so they must be readable.
struct GemmRowWalk {
  int64_t inner, middle;  ///< Rows per middle step and middle steps per outer step; 0: unset.
  int64_t inner_step, middle_step, outer_step;
};

/// op(B) read in place from whole zero-padded images (a convolution's taps), its columns only
/// the output positions: column j = (n * P + p) * Q + q is output (p, q) of image n, and row k
/// of op(B) holds it at b + n * b_image_step + tap_offsets[k] + p * wp + q (a strided
/// convolution's image split into phases makes every tap's positions contiguous along q too:
/// conv/padded.h). C's element (i, j) is c[n * c_image_step + i * ldc + p * Q + q]. The engine
/// loads Q's columns kGemmImageGrain at a time, so Q must be a multiple of it; it reads only the
/// rows' output positions.
struct GemmImages {
  int64_t images;  ///< 0: unset
  int64_t p, q;    ///< output rows and columns of an image
  int64_t wp;      ///< floats between an image's padded rows
  int64_t b_image_step, c_image_step;
  const int64_t* tap_offsets;  ///< K offsets, one per row of op(B)
};

/// Columns of an image's output row that GemmImages loads at a time: Q is a multiple of it.
constexpr int64_t kGemmImageGrain = 4;

/// Row-major GEMM on one matrix: C = alpha * op(A) op(B) + beta * C, beta in {0, 1}.
/// op(A) is M x K, op(B) is K x N; ld* are the stored row lengths.
struct Gemm {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float beta;
  float* c;
  int64_t ldc;
  float*
      pack;  ///< kGemmPackFloats floats of packing scratch (the packed engine's), 64-byte aligned.
  /// Where pack is set, the packed engine packs op(A) or op(B) with it and ignores a and lda
  /// (or b and ldb) and the operand's trans flag; gemm() on OpenBLAS takes neither.
  GemmPacker pack_a_with, pack_b_with;
  /// Where b_walk.inner is set (and pack_b_with is not), the packed engine reads op(B) in place
  /// through it from b, unpacked; ldb and trans_b are ignored. gemm() on OpenBLAS does not take it.
  GemmRowWalk b_walk;
  /// Where b_images.images is set, op(B)'s N = images * P * Q columns are those positions
  /// (GemmImages), read in place from b; n, ldb, trans_b, pack_b_with and b_walk are ignored.
  /// gemm() on OpenBLAS does not take it.
  GemmImages b_images;
};

/// The packed engine's blocks: a kGemmMc x kGemmKc block of A and a kGemmKc x kGemmNc block
/// of B are packed at a time. Fixed within a build, so that the summation order depends on the
/// shapes only. Microcontroller builds (REMAT_CPU_SMALL_SCRATCH) take small blocks: 7 KB of
/// scratch instead of 360 KB.
#if defined(REMAT_CPU_SMALL_SCRATCH)
constexpr int64_t kGemmMc = 24;
constexpr int64_t kGemmKc = 32;
constexpr int64_t kGemmNc = 32;
#else
constexpr int64_t kGemmMc = 96;
constexpr int64_t kGemmKc = 256;
constexpr int64_t kGemmNc = 256;
#endif
/// Floats past column n of a GemmRowWalk's rows that the packed engine may read.
constexpr int64_t kGemmColumnSlack = 32;
/// Floats of packing scratch one packed_gemm() call needs: op(A)'s block, then op(B)'s.
constexpr int64_t kGemmPackFloats = kGemmMc * kGemmKc + kGemmKc * kGemmNc;
/// Where op(B) is walked in place (Gemm::b_walk), the engine packs op(A) only and leaves the
/// scratch from this float on (kGemmKc * kGemmNc floats) to the caller, say for its operands.
constexpr int64_t kGemmWalkFreeFrom = kGemmMc * kGemmKc;

/// Makes gemm() compute on the calling thread alone (OpenBLAS set to one thread, for the whole
/// process): the matmul kernel spreads products over the backend's own threads instead.
void gemm_on_calling_thread();

/// Computes |g| for the matmul ops. The same call gives the same bits.
void gemm(const Gemm& g);

/// Which engine gemm() runs on: "OpenBLAS", or "packed GEMM" in a build without it or where
/// OpenBLAS's core (matmul_blas_core()) has narrower kernels than the packed engine's build for
/// this CPU (OpenBLAS falls back to SSE3 kernels on processors newer than it knows).
const char* matmul_engine();

/// OpenBLAS's core (its name for the kernels it picked for this CPU); null without OpenBLAS.
const char* matmul_blas_core();

/// Whether OpenBLAS's kernels for its core |name| (openblas_get_corename(), any case) use
/// narrower vectors than the packed engine's build |isa|: SSE-only and AVX-without-AVX2 cores
/// against AVX2 or AVX-512, AVX2 ones against AVX-512; never against the baseline build or for
/// a core this list does not know (gemm() then keeps OpenBLAS).
bool blas_core_narrower(const char* name, CpuIsa isa);

/// Computes |g| with the packed engine on the calling thread. Each element of C is summed over
/// K in an order that depends on K only: computing C in row or column slices (A or B and C
/// offset, M or N cut) gives the bits of the whole product.
void packed_gemm(const Gemm& g);

/// A product of bfloat16 operands (their bits) into float32: C = alpha * op(A) op(B) + beta * C,
/// beta in {0, 1} and alpha 1 where beta is 1; fields as Gemm's. The matmul ops' native path in
/// 16-bit plans (bf16_gemm()).
struct Bf16Gemm {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const uint16_t* a;
  int64_t lda;
  const uint16_t* b;
  int64_t ldb;
  float beta;
  float* c;
  int64_t ldc;
  float* pack;  ///< kGemmPackFloats floats of packing scratch, 64-byte aligned.
};

/// bf16_gemm()'s blocks: op(B) kBf16Kc x kBf16Nc and op(A) kBf16Mc x kBf16Kc are packed at a time;
/// K is summed kBf16Kc at a time (the order depends on K only).
constexpr int64_t kBf16Kc = 512;
constexpr int64_t kBf16Nc = 256;
constexpr int64_t kBf16Mc = 64;
#if !defined(REMAT_CPU_SMALL_SCRATCH)  // microcontrollers have neither engine
static_assert((kBf16Kc * kBf16Nc + kBf16Mc * kBf16Kc) * 2 <= kGemmPackFloats * 4,
              "bf16_gemm's packed blocks fit the packing scratch");
#endif

/// Whether bf16_gemm() runs here: an x86-64 build with the bfloat16 engines (a compiler that
/// takes AMX and AVX512-BF16), and a CPU with AMX-BF16 tiles the OS lets the process use (Linux
/// 5.16 or later; asked once) or with AVX512-BF16; and the environment variable REMAT_CPU_BF16
/// not "widen" when first asked (then every bfloat16 op runs widened to float32, as on a CPU
/// without either: docs/precision.md).
bool bf16_gemm_available();

/// The engine bf16_gemm() runs on here: "AMX" or "AVX512-BF16"; nullptr where none.
const char* bf16_gemm_engine();

/// Computes |g| on the calling thread with bf16_gemm_engine()'s engine: products of bfloat16
/// pairs (exact in float32), float32 sums; both engines read subnormal operands as zero and
/// flush subnormal sums. Each element of C is summed in an order that depends on K only, as
/// packed_gemm()'s; the two engines round their sums differently, so their bits differ. Call only
/// where bf16_gemm_available().
void bf16_gemm(const Bf16Gemm& g);

/// bf16_gemm() on AMX tiles (gemm/amx.cc), and whether this CPU and OS run it: for the tests
/// and the bench, which compare the engines.
void bf16_gemm_amx(const Bf16Gemm& g);
bool bf16_gemm_amx_available();
/// bf16_gemm() with AVX512-BF16's VDPBF16PS (gemm/avx512_bf16.cc), and whether this CPU has it.
void bf16_gemm_avx512(const Bf16Gemm& g);
bool bf16_gemm_avx512_available();

/// Columns of K that dot_gemm() reads at a time: it rounds K up to a multiple of this.
constexpr int64_t kGemmDotLanes = 16;

/// C = A B^T or C += A B^T over the columns of K that |keep| marks, both operands read in
/// place: row i of A (m rows) is a + i * lda, row j of B (n rows) is row b_row0 + j of the
/// walk b_walk from b, and each holds K consecutive floats. The engine reads every row, and
/// keep, to K rounded up to kGemmDotLanes; keep[p] is -1 (all bits) where column p counts and 0
/// where it does not, past K too, and A must be finite where keep is 0 (B need not be: it is
/// masked, so a dropped inf or NaN never reaches C). Each element of C sums its kept columns in
/// an order that depends on K only, whatever rows m, n and b_row0 select.
struct GemmDot {
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  const float* b;
  GemmRowWalk b_walk;
  int64_t b_row0;
  const int32_t* keep;
  float* c;
  int64_t ldc;
  bool accumulate;  ///< C += A B^T, else C = A B^T
  /// Where images.images is set, K runs over the output positions of those images instead, and
  /// k, keep and b_walk are not read: row i of A holds image n's P * Q outputs at a + n *
  /// a_image_step + i * lda, and row j of B its output (p, q) at b + n * b_image_step +
  /// tap_offsets[b_row0 + j] + p * wp + q (GemmImages' positions). P * Q is a multiple of
  /// kGemmDotLanes, and Q of kGemmImageGrain. Each element of C sums image after image, in an
  /// order that depends on the images and P, Q only.
  struct Images {
    int64_t images;  ///< 0: unset
    int64_t p, q, wp;
    int64_t a_image_step, b_image_step;
    const int64_t* tap_offsets;
  } images;
};

/// Computes |g| with the dot-product engine on the calling thread.
void dot_gemm(const GemmDot& g);

/// The packed engine's instruction set on this CPU: "avx512", "avx2" or "baseline".
const char* packed_gemm_isa();

/// The packed engine for one instruction set (gemm/packed.cc, compiled once per set); call
/// only when the CPU has it. For the tests and the bench, which compare them.
void packed_gemm_baseline(const Gemm& g);
void packed_gemm_avx2(const Gemm& g);
void packed_gemm_avx512(const Gemm& g);

/// The dot-product engine for one instruction set (gemm/dot.cc), as for the packed engine.
void dot_gemm_baseline(const GemmDot& g);
void dot_gemm_avx2(const GemmDot& g);
void dot_gemm_avx512(const GemmDot& g);

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_GEMM_GEMM_H_
