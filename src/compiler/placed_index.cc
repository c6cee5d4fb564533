// Segment trees of merged byte ranges over op indices (see placed_index.h).
#include "compiler/placed_index.h"

#include <algorithm>
#include <iterator>

namespace remat {
namespace compiler {

void ByteRanges::add(uint64_t start, uint64_t end) {
  // The first range that may touch [start, end): the one before |start| if it reaches it.
  auto it = ranges_.upper_bound(start);
  if (it != ranges_.begin() && std::prev(it)->second >= start) --it;
  while (it != ranges_.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace_hint(it, start, end);
}

uint64_t ByteRanges::first_fit(uint64_t from, uint64_t size) const {
  // Ranges are disjoint and sorted, so the last one starting before from + size reaches
  // furthest among those that could meet [from, from + size).
  auto it = ranges_.lower_bound(from + size);
  if (it == ranges_.begin()) return from;
  --it;
  if (it->second <= from) return from;
  uint64_t x = it->second;
  for (++it; it != ranges_.end() && it->first < x + size; ++it) x = it->second;
  return x;
}

PlacedIndex::PlacedIndex(size_t ops) : leaves_(1) {
  while (leaves_ < ops) leaves_ *= 2;
  covering_.resize(2 * leaves_);
  starting_.resize(2 * leaves_);
}

void PlacedIndex::add_to(std::vector<std::unique_ptr<ByteRanges>>& tree, size_t node,
                         uint64_t start, uint64_t end) {
  if (!tree[node]) tree[node].reset(new ByteRanges());
  tree[node]->add(start, end);
}

void PlacedIndex::add(size_t from, size_t to, uint64_t start, uint64_t end) {
  if (start == end) return;  // no bytes: meets nothing
  for (size_t node = leaves_ + from; node >= 1; node /= 2) add_to(starting_, node, start, end);
  for (size_t lo = leaves_ + from, hi = leaves_ + to + 1; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) add_to(covering_, lo++, start, end);
    if (hi & 1) add_to(covering_, --hi, start, end);
  }
}

uint64_t PlacedIndex::lowest_fit(size_t from, size_t to, uint64_t size) {
  if (size == 0) return 0;
  std::vector<const ByteRanges*>& sets = scratch_;
  sets.clear();
  for (size_t node = leaves_ + from; node >= 1; node /= 2) {
    if (covering_[node]) sets.push_back(covering_[node].get());
  }
  for (size_t lo = leaves_ + from + 1, hi = leaves_ + to + 1; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) {
      if (starting_[lo]) sets.push_back(starting_[lo].get());
      ++lo;
    }
    if (hi & 1) {
      --hi;
      if (starting_[hi]) sets.push_back(starting_[hi].get());
    }
  }
  // Each set moves x up to its own first fit at or after x; no fit in all of them lies below
  // any of those, so x stops at the lowest common fit once a whole round leaves it in place.
  uint64_t x = 0;
  for (size_t k = 0, unmoved = 0; unmoved < sets.size(); k = (k + 1) % sets.size()) {
    const uint64_t y = sets[k]->first_fit(x, size);
    unmoved = y == x ? unmoved + 1 : 1;
    x = y;
  }
  return x;
}

}  // namespace compiler
}  // namespace remat
