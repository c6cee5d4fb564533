// Host code that walks a Philox stream (plan/philox.h) word after word: each group of four words
// is computed once for the words that share it, where philox_word() computes a group per word.
#ifndef REMAT_PLAN_PHILOX_WORDS_H_
#define REMAT_PLAN_PHILOX_WORDS_H_

#include <stdint.h>

#include "plan/philox.h"

namespace remat {

/// The words of stream (seed, step, key); philox_word()'s, the last group kept.
class PhiloxWords {
 public:
  PhiloxWords(uint64_t seed, uint64_t step, uint64_t key) : seed_(seed), step_(step), key_(key) {}

  /// Word |i| of the stream: philox_word(seed, step, key, i).
  uint32_t operator()(uint64_t i) {
    if ((i >> 2) != group_) {
      group_ = i >> 2;
      words_ = philox_group(seed_, step_, key_, i & ~uint64_t{3});
    }
    return words_.v[i & 3];
  }

 private:
  uint64_t seed_, step_, key_;
  uint64_t group_ = ~uint64_t{0};  // no group index reaches it (indices are below 2^64)
  Philox4 words_{};
};

}  // namespace remat

#endif  // REMAT_PLAN_PHILOX_WORDS_H_
