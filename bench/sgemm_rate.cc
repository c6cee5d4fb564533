// The CPU backend's SGEMM rates, for the tables of docs/benchmarks.md: the matmul ops' engine
// (backends/cpu/gemm/gemm.h: OpenBLAS, or the packed engine without it or where its kernels are
// narrower) and the packed engine the convolutions use, on one thread and on --threads threads
// that each compute a column slice as the convolution kernels do. On a square product, on the
// shapes a ResNet-20 convolution multiplies and on a transformer's forward product (x W^T: both
// operands stored along K, so packing transposes them); the packed engine on the same products in
// bfloat16, widening its operands as it packs them (gemm/half_panels.h: the 16-bit products of a
// CPU without bfloat16 engines); and bf16_gemm (AMX or AVX512-BF16) where the CPU has one of
// them. It measures; it asserts nothing.
//
//   sgemm_rate [--repeats N] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/gemm/half_panels.h"
#include "plan/half_float.h"
#include "remat/remat.h"
#include "runtime/port.h"

namespace {

using remat::cpu::Gemm;

struct Shape {
  const char* what;
  int64_t m, n, k;
  bool trans_b;  // B stored N x K
};

// Column slices of one product, one per thread of a team.
struct Sliced {
  const Gemm* whole;
  std::vector<float>* packs;
  uint32_t threads;
};

void run_slice(void* context, uint32_t index) {
  const Sliced& s = *static_cast<const Sliced*>(context);
  const int64_t chunk = (s.whole->n + s.threads - 1) / s.threads;
  const int64_t begin = std::min<int64_t>(s.whole->n, index * chunk),
                end = std::min(s.whole->n, begin + chunk);
  Gemm g = *s.whole;
  g.n = end - begin;
  g.b += s.whole->trans_b ? begin * s.whole->ldb : begin;  // B's columns are its rows
  g.c += begin;
  g.pack = s.packs[index].data();
  remat::cpu::packed_gemm(g);
}

enum class Engine { kMatmul, kPacked, kPackedTeam, kPackedBf16, kBf16 };

// Best GFLOP/s of |repeats| products of |s| (C = A op(B), row-major).
double rate(const Shape& s, int repeats, Engine engine, remat::PortTeam* team, uint32_t threads) {
  std::vector<float> a(static_cast<size_t>(s.m * s.k), 0.5f),
      b(static_cast<size_t>(s.k * s.n), 0.25f), c(static_cast<size_t>(s.m * s.n));
  std::vector<std::vector<float>> packs(threads, std::vector<float>(remat::cpu::kGemmPackFloats));
  Gemm g{};
  g.m = s.m;
  g.n = s.n;
  g.k = s.k;
  g.alpha = 1.0f;
  g.a = a.data();
  g.lda = s.k;
  g.b = b.data();
  g.ldb = s.trans_b ? s.k : s.n;
  g.trans_b = s.trans_b;
  g.c = c.data();
  g.ldc = s.n;
  g.pack = packs[0].data();
  Sliced sliced{&g, packs.data(), threads};
  // The same product in bfloat16 (0.5 and 0.25 are exact), for bf16_gemm.
  std::vector<uint16_t> a16(a.size(), remat::f32_to_bf16(0.5f)),
      b16(b.size(), remat::f32_to_bf16(0.25f));
  remat::cpu::Bf16Gemm h{};
  h.m = s.m;
  h.n = s.n;
  h.k = s.k;
  h.alpha = 1.0f;
  h.a = a16.data();
  h.lda = s.k;
  h.b = b16.data();
  h.ldb = g.ldb;
  h.trans_b = s.trans_b;
  h.c = c.data();
  h.ldc = s.n;
  h.pack = packs[0].data();
  // The same for the packed engine, widened as it packs (A not transposed: stored along K).
  const remat::cpu::HalfOperand a_half{a16.data(), s.k, true, REMAT_DTYPE_BF16},
      b_half{b16.data(), g.ldb, s.trans_b, REMAT_DTYPE_BF16};
  Gemm widened = g;
  widened.pack_a_with = remat::cpu::half_packer(&a_half);
  widened.pack_b_with = remat::cpu::half_packer(&b_half);
  double best = 0.0;
  for (int r = 0; r <= repeats; ++r) {  // the first run warms up
    const auto t0 = std::chrono::steady_clock::now();
    if (engine == Engine::kMatmul) remat::cpu::gemm(g);
    if (engine == Engine::kPacked) remat::cpu::packed_gemm(g);
    if (engine == Engine::kPackedTeam) remat::port_team_run(team, run_slice, &sliced);
    if (engine == Engine::kPackedBf16) remat::cpu::packed_gemm(widened);
    if (engine == Engine::kBf16) remat::cpu::bf16_gemm(h);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::max(best, 2.0 * static_cast<double>(s.m * s.n * s.k) / seconds / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 10;
  uint32_t threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = static_cast<uint32_t>(std::max(1, std::atoi(argv[++i])));
    } else {
      std::fprintf(stderr, "usage: sgemm_rate [--repeats N] [--threads N]\n");
      return 2;
    }
  }
  const char* engine = remat::cpu::matmul_engine();
  const char* blas_core = remat::cpu::matmul_blas_core();
  remat::PortTeam* team = threads > 1 ? remat::port_team_create(threads) : nullptr;
  if (threads > 1 && team == nullptr) {
    std::fprintf(stderr, "sgemm_rate: could not start %u threads\n", threads);
    return 1;
  }
  const char* blas_threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf(
      "# remat CPU SGEMM, best of %d; matmul engine: %s (OpenBLAS core %s, "
      "OPENBLAS_NUM_THREADS=%s); "
      "packed engine: %s\n",
      repeats, engine, blas_core ? blas_core : "none", blas_threads ? blas_threads : "(unset)",
      remat::cpu::packed_gemm_isa());
  const char* bf16_engine = remat::cpu::bf16_gemm_engine();
  std::printf(
      "| product | M | N | K | matmul GFLOP/s | packed, 1 thread | packed, %u threads | packed "
      "bf16 (widened), 1 thread | bf16 (%s), 1 thread |\n",
      threads, bf16_engine != nullptr ? bf16_engine : "none here");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  const Shape shapes[] = {
      {"square", 1024, 1024, 1024, false},
      {"ResNet-20 stage 1 conv, one image", 16, 1024, 144, false},
      {"ResNet-20 stage 3 conv, one image", 64, 64, 576, false},
      {"bert-mini FFN forward, x W^T, batch 32", 4096, 1024, 256, true},
  };
  for (const Shape& s : shapes) {
    const double team_rate = team != nullptr ? rate(s, repeats, Engine::kPackedTeam, team, threads)
                                             : rate(s, repeats, Engine::kPacked, nullptr, 1);
    char bf16[32] = "-";
    if (bf16_engine != nullptr)
      std::snprintf(bf16, sizeof bf16, "%.1f", rate(s, repeats, Engine::kBf16, nullptr, 1));
    std::printf("| %s | %lld | %lld | %lld | %.1f | %.1f | %.1f | %.1f | %s |\n", s.what,
                static_cast<long long>(s.m), static_cast<long long>(s.n),
                static_cast<long long>(s.k), rate(s, repeats, Engine::kMatmul, nullptr, 1),
                rate(s, repeats, Engine::kPacked, nullptr, 1), team_rate,
                rate(s, repeats, Engine::kPackedBf16, nullptr, 1), bf16);
  }
  remat::port_team_destroy(team);
  return 0;
}
