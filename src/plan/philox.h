// Philox4x32-10 counter-based random numbers (Salmon et al. 2011, "Parallel random numbers:
// as easy as 1, 2, 3"): the value for (seed, step, key, index) is a pure function, so a
// recomputed dropout mask equals the first one without storing any state.
#ifndef REMAT_PLAN_PHILOX_H_
#define REMAT_PLAN_PHILOX_H_

#include <stdint.h>

namespace remat {

/// Four 32-bit random words for counter |c| under key |k|.
struct Philox4 {
  uint32_t v[4];
};

/// Runs the ten Philox4x32 rounds on counter (c0..c3) with key (k0, k1).
inline Philox4 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                          uint32_t k1) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

/// Maps a random word to a float uniform in [0, 1) with 24 bits of resolution.
inline float uniform01(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }

/// The random word for element |index| of the stream (|seed|, |step|, |key|). Four consecutive
/// elements share one Philox call; callers that walk elements in order may batch them.
inline uint32_t philox_word(uint64_t seed, uint64_t step, uint64_t key, uint64_t index) {
  const Philox4 r = philox4x32(static_cast<uint32_t>(index >> 2), static_cast<uint32_t>(index >> 34),
                               static_cast<uint32_t>(step), static_cast<uint32_t>(key),
                               static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return r.v[index & 3];
}

}  // namespace remat

#endif  // REMAT_PLAN_PHILOX_H_
