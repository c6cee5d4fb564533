// The matmul ops' GEMM (OpenBLAS or the packed engine) and the packed and dot-product engines'
// choice of instruction set.
#include "backends/cpu/gemm/gemm.h"

#include "backends/cpu/isa/isa.h"

#if REMAT_CPU_BF16_GEMM
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if REMAT_HAVE_BLAS
#include <cblas.h>

#include <limits>
#endif

namespace remat {
namespace cpu {

void packed_gemm(const Gemm& g) { REMAT_CPU_BEST(packed_gemm)(g); }

void dot_gemm(const GemmDot& g) { REMAT_CPU_BEST(dot_gemm)(g); }

#if REMAT_CPU_BF16_GEMM
namespace {

// REMAT_CPU_BF16=widen (read once): bfloat16 runs widened to float32 as on a CPU without AMX or
// AVX512-BF16, to measure that path here or reproduce its bits.
bool bf16_engines_allowed() {
  static const bool allowed = [] {
    const char* choice = getenv("REMAT_CPU_BF16");
    return choice == nullptr || strcmp(choice, "widen") != 0;
  }();
  return allowed;
}

}  // namespace

// Here, not in the engines' files: those are built for AVX-512, and this runs on every CPU.
bool bf16_gemm_amx_available() {
  static const bool available = [] {
    if (!bf16_engines_allowed()) return false;
    // The shared packing is built with -mavx512bf16, which lets the compiler use AVX512-BW.
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) return false;
    // CPUID leaf 7: EDX bit 22 is AMX-BF16, bit 24 AMX-TILE.
    unsigned eax, ebx, ecx, edx;
    __asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
    if ((edx & (1u << 22)) == 0 || (edx & (1u << 24)) == 0) return false;
    // Linux hands the tiles' 8 KB of register state to a process only when it asks
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18); a kernel before 5.16 refuses.
    constexpr int kArchReqXcompPerm = 0x1023;
    constexpr int kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return available;
}

bool bf16_gemm_avx512_available() {
  // libgcc's check includes the OS's saving of the AVX-512 registers (XCR0); -mavx512bf16, which
  // the engine is built with, lets the compiler use AVX512-BW too.
  static const bool available = bf16_engines_allowed() && __builtin_cpu_supports("avx512f") &&
                                __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512bf16");
  return available;
}

const char* bf16_gemm_engine() {
  if (bf16_gemm_amx_available()) return "AMX";
  if (bf16_gemm_avx512_available()) return "AVX512-BF16";
  return nullptr;
}

void bf16_gemm(const Bf16Gemm& g) {
  // The tiles first: where both run, AMX is the faster (one TDPBF16PS does 256 times the
  // multiply-adds of a VDPBF16PS).
  if (bf16_gemm_amx_available()) {
    bf16_gemm_amx(g);
  } else {
    bf16_gemm_avx512(g);
  }
}
#else
// A build without the engines (another architecture, or a compiler without the intrinsics).
bool bf16_gemm_amx_available() { return false; }
bool bf16_gemm_avx512_available() { return false; }
const char* bf16_gemm_engine() { return nullptr; }
void bf16_gemm(const Bf16Gemm&) {}
void bf16_gemm_amx(const Bf16Gemm&) {}
void bf16_gemm_avx512(const Bf16Gemm&) {}
#endif

bool bf16_gemm_available() { return bf16_gemm_engine() != nullptr; }

const char* packed_gemm_isa() {
#if REMAT_CPU_X86_VARIANTS
  switch (best_cpu_isa()) {
    case CpuIsa::kAvx512: return "avx512";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kBaseline: break;
  }
#endif
  return "baseline";
}

// OpenBLAS picks its core by the CPU's model number, and one it does not know yet (an Emerald
// Rapids Xeon, model 207, in OpenBLAS 0.3.21) falls back to Prescott's SSE3 kernels: 41 GFLOP/s
// on one thread where the packed engine's AVX-512 build gives 160 and OpenBLAS's own SkylakeX
// kernels 199.
bool blas_core_narrower(const char* name, CpuIsa isa) {
  if (isa == CpuIsa::kBaseline || name == nullptr) return false;
  // Cores whose kernels have no AVX2 (SSE only, or AVX and FMA4 without AVX2).
  static const char* const kBelowAvx2[] = {
      "katmai", "coppermine",  "northwood", "prescott",  "banias",     "atom",         "core2",
      "penryn", "dunnington",  "nehalem",   "athlon",    "opteron",    "opteron_sse3", "barcelona",
      "nano",   "sandybridge", "bobcat",    "bulldozer", "piledriver", "steamroller",  "unknown"};
  // Cores with AVX2 kernels but no AVX-512 ones.
  static const char* const kAvx2Only[] = {"haswell", "zen", "excavator"};
  for (const char* core : kBelowAvx2) {
    if (strcasecmp(name, core) == 0) return true;
  }
  if (isa != CpuIsa::kAvx512) return false;
  for (const char* core : kAvx2Only) {
    if (strcasecmp(name, core) == 0) return true;
  }
  return false;
}

#if REMAT_HAVE_BLAS

namespace {

// Whether gemm() runs on OpenBLAS: unless OpenBLAS's core is narrower than the packed engine's
// build for this CPU. Fixed for the process (the CPU and OpenBLAS's core do not change), so the
// same call always gives the same bits.
bool matmul_on_blas() {
#if REMAT_CPU_X86_VARIANTS
  static const bool on_blas = !blas_core_narrower(openblas_get_corename(), best_cpu_isa());
  return on_blas;
#else
  return true;
#endif
}

}  // namespace

void gemm_on_calling_thread() {
  // OpenBLAS's own workers spin in sched_yield for a long while after each call and took the
  // cores from remat's kernel threads between products: step times varied by up to 40%.
  openblas_set_num_threads(1);
}

const char* matmul_engine() { return matmul_on_blas() ? "OpenBLAS" : "packed GEMM"; }

const char* matmul_blas_core() { return openblas_get_corename(); }

void gemm(const Gemm& g) {
  if (g.m == 0 || g.n == 0) return;
  // Sizes and row lengths past OpenBLAS's integer (a verified tensor may hold 2^40 elements, a
  // head_matmul's interleaved rows are that long) go to the packed engine, which takes int64.
  constexpr int64_t kBlasMax = std::numeric_limits<blasint>::max();
  if (!matmul_on_blas() || g.m > kBlasMax || g.n > kBlasMax || g.k > kBlasMax || g.lda > kBlasMax ||
      g.ldb > kBlasMax || g.ldc > kBlasMax) {
    packed_gemm(g);
    return;
  }
  // OpenBLAS wants ld >= 1 even for empty operands.
  auto ld = [](int64_t v) { return static_cast<blasint>(v > 0 ? v : 1); };
  cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
              g.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(g.m),
              static_cast<blasint>(g.n), static_cast<blasint>(g.k), g.alpha, g.a, ld(g.lda), g.b,
              ld(g.ldb), g.beta, g.c, ld(g.ldc));
}

#else

void gemm_on_calling_thread() {}

const char* matmul_engine() { return "packed GEMM"; }

const char* matmul_blas_core() { return nullptr; }

void gemm(const Gemm& g) { packed_gemm(g); }

#endif

}  // namespace cpu
}  // namespace remat
