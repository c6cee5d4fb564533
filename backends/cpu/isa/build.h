// Included by the files meson compiles once per instruction set (isa/isa.h lists them), inside
// nothing: checks that REMAT_CPU_ISA names the build and gives its entry points their names
// and its widest float vector. Everything else such a file defines stays local, so no inline
// function compiled for a wider set can reach a caller on a CPU without it.
#ifndef REMAT_BACKENDS_CPU_ISA_BUILD_H_
#define REMAT_BACKENDS_CPU_ISA_BUILD_H_

#include <stdint.h>
#include <string.h>

#include <utility>

#if !defined(REMAT_CPU_ISA)
#error "compile with -DREMAT_CPU_ISA=baseline|avx2|avx512"
#endif
#define REMAT_CPU_CONCAT2(a, b) a##b
#define REMAT_CPU_CONCAT(a, b) REMAT_CPU_CONCAT2(a, b)
/// This build's entry point |name|: name_baseline, name_avx2 or name_avx512.
#define REMAT_CPU_ENTRY(name) REMAT_CPU_CONCAT(name##_, REMAT_CPU_ISA)

namespace remat {
namespace cpu {
namespace {

/// The widest vectors of this build: 16 floats with AVX-512, 8 with AVX, 4 with SSE.
#if defined(__AVX512F__)
typedef float vec __attribute__((vector_size(64)));
typedef int32_t ivec __attribute__((vector_size(64)));
#elif defined(__AVX__)
typedef float vec __attribute__((vector_size(32)));
typedef int32_t ivec __attribute__((vector_size(32)));
#else
typedef float vec __attribute__((vector_size(16)));
typedef int32_t ivec __attribute__((vector_size(16)));
#endif
/// Floats per vector.
constexpr int64_t kVec = sizeof(vec) / sizeof(float);

/// A vector of kLanes floats.
template <int64_t kLanes>
struct Lanes {
  typedef float type __attribute__((vector_size(kLanes * sizeof(float))));
};

/// lo's lanes, then hi's (I: 0 to twice a half's lanes).
template <typename Half, size_t... I>
inline auto concat(Half lo, Half hi, std::index_sequence<I...>) {
  return __builtin_shufflevector(lo, hi, I...);
}

/// kLanes floats from |b| as kRuns runs of kLanes / kRuns each, run t at b + offset[t] (a
/// convolution's output positions, contiguous along an output row only).
template <int64_t kLanes, int kRuns>
inline typename Lanes<kLanes>::type load_runs(const float* b, const int64_t* offset) {
  if constexpr (kRuns == 1) {
    typename Lanes<kLanes>::type v;
    memcpy(&v, b + offset[0], sizeof(v));
    return v;
  } else {
    return concat(load_runs<kLanes / 2, kRuns / 2>(b, offset),
                  load_runs<kLanes / 2, kRuns / 2>(b, offset + kRuns / 2),
                  std::make_index_sequence<kLanes>());
  }
}

}  // namespace
}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_ISA_BUILD_H_
