// Philox4x32-10 counter-based random numbers (Salmon et al. 2011, "Parallel random numbers:
// as easy as 1, 2, 3"): the value for (seed, step, key, index) is a pure function, so a
// recomputed dropout mask equals the first one without storing any state.
//
// One text for every place that draws these numbers: host C++ (the CPU kernels, parameter
// initialisation), the OpenCL program (embedded before backends/gpu/kernels) and CUDA device
// code (backends/cuda/gpu_kernels.cu). It is therefore written in the C subset that OpenCL C 1.2
// accepts: C casts, no namespaces or references there, a typedef'd struct, and the few names
// that differ (integer types, function qualifiers, the high half of a 32-bit product) as macros.
#ifndef REMAT_PLAN_PHILOX_H_
#define REMAT_PLAN_PHILOX_H_

#if defined(__OPENCL_C_VERSION__)
#define REMAT_PHILOX_U32 uint
#define REMAT_PHILOX_U64 ulong
#define REMAT_PHILOX_FN static inline
#define REMAT_PHILOX_MUL_HI(a, b) mul_hi((uint)(a), (uint)(b))
#else
#include <stdint.h>
#define REMAT_PHILOX_U32 uint32_t
#define REMAT_PHILOX_U64 uint64_t
#if defined(__CUDACC__)
#define REMAT_PHILOX_FN __host__ __device__ inline
#else
#define REMAT_PHILOX_FN inline
#endif
#if defined(__CUDA_ARCH__)
#define REMAT_PHILOX_MUL_HI(a, b) __umulhi((a), (b))
#else
#define REMAT_PHILOX_MUL_HI(a, b) ((REMAT_PHILOX_U32)(((REMAT_PHILOX_U64)(a) * (b)) >> 32))
#endif
#endif

#if defined(__cplusplus)
namespace remat {
#endif

/// Four 32-bit random words for counter |c| under key |k|.
typedef struct Philox4 {
  REMAT_PHILOX_U32 v[4];
} Philox4;

/// Runs the ten Philox4x32 rounds on counter (c0..c3) with key (k0, k1).
REMAT_PHILOX_FN Philox4 philox4x32(REMAT_PHILOX_U32 c0, REMAT_PHILOX_U32 c1, REMAT_PHILOX_U32 c2,
                                   REMAT_PHILOX_U32 c3, REMAT_PHILOX_U32 k0, REMAT_PHILOX_U32 k1) {
  const REMAT_PHILOX_U32 kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const REMAT_PHILOX_U32 kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const REMAT_PHILOX_U32 hi0 = REMAT_PHILOX_MUL_HI(kM0, c0), lo0 = kM0 * c0;
    const REMAT_PHILOX_U32 hi1 = REMAT_PHILOX_MUL_HI(kM1, c2), lo1 = kM1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  Philox4 r;
  r.v[0] = c0;
  r.v[1] = c1;
  r.v[2] = c2;
  r.v[3] = c3;
  return r;
}

/// Maps a random word to a float uniform in [0, 1) with 24 bits of resolution.
REMAT_PHILOX_FN float uniform01(REMAT_PHILOX_U32 word) {
  return (float)(word >> 8) * (1.0f / 16777216.0f);
}

/// The step of the initialisation streams, which no training step reaches: parameter |t|'s
/// element i takes word i of stream (seed, REMAT_PHILOX_INIT_STEP, t), on the host
/// (runtime/param_init.cc) and on the GPU (kernel init_draw) alike.
#define REMAT_PHILOX_INIT_STEP 0xFFFFFFFFu

/// A uniform initial value in [-|scale|, |scale|) from |word|: the formula both init drawers use.
REMAT_PHILOX_FN float uniform_init(REMAT_PHILOX_U32 word, float scale) {
  return scale * (2.0f * uniform01(word) - 1.0f);
}

/// The words of elements |index| .. |index| + 3 of the stream (|seed|, |step|, |key|); |index|
/// is a multiple of 4. Every caller that draws a mask walks elements in groups of four this way.
REMAT_PHILOX_FN Philox4 philox_group(REMAT_PHILOX_U64 seed, REMAT_PHILOX_U64 step,
                                     REMAT_PHILOX_U64 key, REMAT_PHILOX_U64 index) {
  return philox4x32((REMAT_PHILOX_U32)(index >> 2), (REMAT_PHILOX_U32)(index >> 34),
                    (REMAT_PHILOX_U32)step, (REMAT_PHILOX_U32)key, (REMAT_PHILOX_U32)seed,
                    (REMAT_PHILOX_U32)(seed >> 32));
}

/// The random word for element |index| of the stream (|seed|, |step|, |key|). Four consecutive
/// elements share one Philox call (philox_group); callers that walk elements in order batch them.
REMAT_PHILOX_FN REMAT_PHILOX_U32 philox_word(REMAT_PHILOX_U64 seed, REMAT_PHILOX_U64 step,
                                             REMAT_PHILOX_U64 key, REMAT_PHILOX_U64 index) {
  return philox_group(seed, step, key, index).v[index & 3];
}

#if defined(__cplusplus)
}  // namespace remat
#endif

#endif  // REMAT_PLAN_PHILOX_H_
