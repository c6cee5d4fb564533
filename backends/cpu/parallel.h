// How CPU kernels spread work over the backend's threads: parallel_for() cuts an index range
// into one contiguous part per thread. Every kernel cuts along a dimension whose parts write
// disjoint outputs and sum nothing across parts, so the bits never depend on the thread count.
#ifndef REMAT_BACKENDS_CPU_PARALLEL_H_
#define REMAT_BACKENDS_CPU_PARALLEL_H_

#include <stdint.h>

#include "backends/cpu/conv/winograd.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/ops/work_splits.h"
#include "plan/op_subset.h"
#include "plan/ops.h"
#include "runtime/port.h"

namespace remat {
namespace cpu {

/// Threads a kernel may use.
inline uint32_t thread_count(const KernelArgs& a) {
  return a.team != nullptr && a.threads > 1 ? a.threads : 1;
}

/// Packing scratch of thread |worker| for packed_gemm().
inline float* gemm_pack(const KernelArgs& a, uint32_t worker) {
  return static_cast<float*>(a.scratch) + static_cast<int64_t>(worker) * kGemmPackFloats;
}

/// The scratch past every thread's packing: kWinogradFilterFloats floats that all threads share.
inline float* shared_scratch(const KernelArgs& a) {
  return static_cast<float*>(a.scratch) +
         static_cast<int64_t>(a.threads > 0 ? a.threads : 1) * kGemmPackFloats;
}

/// Rows and columns of each thread's float32 strip, in which a matrix product sums a 16-bit C
/// before it rounds it (ops/matmul.cc; the bits do not depend on its size) and layer norm reads
/// and writes its 16-bit rows (ops/norm.cc, where kNormRowSlots rows fit): kWideningStripFloats,
/// the figure the compiler counts with: a product's whole tile (ops/work_splits.h), so that its
/// op(B) is packed once for all of its rows as a float32 C's is; 1 KiB in microcontroller builds
/// (REMAT_CPU_SMALL_SCRATCH), whose layer norms over rows longer than a third of that widen whole
/// (docs/firmware.md); none in a build without 16-bit floats (plan/op_subset.h).
#if defined(REMAT_CPU_SMALL_SCRATCH)
constexpr int64_t kProductStripRows = 8;
constexpr int64_t kProductStripCols = 32;
#else
constexpr int64_t kProductStripRows = kMatmulRowBlock;
constexpr int64_t kProductStripCols = kMatmulColumnBlock;
static_assert(kProductStripRows * kProductStripCols == kWideningStripFloats, "one strip size");
#endif
constexpr int64_t kProductStripFloats =
    kBuildHalfFloats ? kProductStripRows * kProductStripCols : 0;

/// Thread |worker|'s strip (a product's 16-bit C, layer norm's rows): kProductStripFloats floats
/// of KernelArgs::strips.
inline float* product_strip(const KernelArgs& a, uint32_t worker) {
  return a.strips + static_cast<int64_t>(worker) * kProductStripFloats;
}

/// Calls body(begin, end, worker) on disjoint parts covering [0, count), at most one per
/// thread and all at once; each part but the last is a multiple of |grain| long (grain >= 1:
/// a SIMD width, a GEMM panel, or enough work to be worth a thread).
template <typename Body>
void parallel_for(const KernelArgs& a, int64_t count, int64_t grain, const Body& body) {
  const int64_t threads = thread_count(a);
  const int64_t grains = (count + grain - 1) / grain;
  if (threads == 1 || grains <= 1) {
    if (count > 0) body(int64_t{0}, count, 0u);
    return;
  }
  const int64_t parts = grains < threads ? grains : threads;
  struct Split {
    const Body* body;
    int64_t count, chunk;
  } split{&body, count, (grains + parts - 1) / parts * grain};
  port_team_run(
      a.team,
      [](void* context, uint32_t index) {
        const Split& s = *static_cast<const Split*>(context);
        const int64_t begin = static_cast<int64_t>(index) * s.chunk;
        if (begin >= s.count) return;
        const int64_t end = begin + s.chunk < s.count ? begin + s.chunk : s.count;
        (*s.body)(begin, end, index);
      },
      &split);
}

}  // namespace cpu
}  // namespace remat

#endif  // REMAT_BACKENDS_CPU_PARALLEL_H_
