// The widest instruction set this CPU runs of those the CPU backend's per-set code is compiled
// for (meson builds gemm/packed.cc, gemm/dot.cc, conv/winograd.cc, ops/batchnorm_channels.cc,
// ops/attention_tiles.cc and isa/math_span.cc once per set, with REMAT_CPU_ISA naming it:
// isa/build.h; other CPUs than x86-64 get the baseline build only).
#ifndef REMAT_BACKENDS_CPU_ISA_ISA_H_
#define REMAT_BACKENDS_CPU_ISA_ISA_H_

namespace remat {
namespace cpu {

/// An instruction set the per-set code is compiled for.
enum class CpuIsa { kBaseline, kAvx2, kAvx512 };

/// The widest one this CPU has: asked each call (a load and a test), so no state.
inline CpuIsa best_cpu_isa() {
#if REMAT_CPU_X86_VARIANTS
  if (__builtin_cpu_supports("avx512f")) return CpuIsa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kBaseline;
}

}  // namespace cpu
}  // namespace remat

/// The build of per-set entry point |name| (name_baseline, name_avx2, name_avx512) that
/// best_cpu_isa() picks; where only the baseline is compiled, that one.
#if REMAT_CPU_X86_VARIANTS
#define REMAT_CPU_BEST(name)                                                     \
  (::remat::cpu::best_cpu_isa() == ::remat::cpu::CpuIsa::kAvx512 ? name##_avx512 \
   : ::remat::cpu::best_cpu_isa() == ::remat::cpu::CpuIsa::kAvx2 ? name##_avx2   \
                                                                 : name##_baseline)
#else
#define REMAT_CPU_BEST(name) name##_baseline
#endif

#endif  // REMAT_BACKENDS_CPU_ISA_ISA_H_
