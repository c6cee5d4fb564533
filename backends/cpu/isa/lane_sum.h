// A sum in double (or float, REMAT_FLOAT_SUMS) over eight interleaved accumulators (element i goes
// to lane i % 8), combined pairwise at the end: a fixed order, so the same bits on any thread
// count, and independent chains the compiler vectorizes (one serial chain of double adds cost a
// ResNet-20 step a tenth of its time). For the CPU kernels, the per-instruction-set builds
// included: it sits in an unnamed namespace, so each file compiles its own copy with its own
// instruction set and no build's copy can stand in for another's at link time.
#ifndef REMAT_BACKENDS_CPU_ISA_LANE_SUM_H_
#define REMAT_BACKENDS_CPU_ISA_LANE_SUM_H_

#include <stdint.h>

namespace remat {
namespace cpu {
namespace {

/// What the CPU kernels' sums (reductions, losses, normalisation statistics) accumulate in:
/// double, or float in a build with REMAT_FLOAT_SUMS (meson -Dfloat_sums=true), for a
/// processor whose FPU has no double, such as a Cortex-M4F's, which computes double in
/// software. Every sum keeps its order either way; with float, its partial sums and what is
/// computed from them (1 / sum, log, sqrt) round to float, and a sum overflows once it passes
/// float's range (docs/firmware.md).
#if defined(REMAT_FLOAT_SUMS)
typedef float Accum;
#else
typedef double Accum;
#endif

/// Accumulates terms into kLanes Accum lanes; total() adds the lanes in a fixed order.
struct LaneSum {
  static constexpr int64_t kLanes = 8;
  Accum lane[kLanes] = {};
  /// Adds f(i) for i in [0, count) into lanes i % kLanes.
  template <typename F>
  void add(int64_t count, const F& f) {
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) lane[l] += f(i + l);
    }
    for (int64_t l = 0; i + l < count; ++l) lane[l] += f(i + l);
  }
  /// The lanes added pairwise.
  Accum total() const {
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
};

/// Sum of f(i) over [0, count) through one LaneSum.
template <typename F>
Accum lane_sum(int64_t count, const F& f) {
  LaneSum sum;
  sum.add(count, f);
  return sum.total();
}

}  // namespace
}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_ISA_LANE_SUM_H_
