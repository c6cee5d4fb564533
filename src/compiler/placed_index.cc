// Segment trees of merged byte ranges over op indices (see placed_index.h).
#include "compiler/placed_index.h"

#include <algorithm>

namespace remat {
namespace compiler {

void ByteRanges::add(uint64_t start, uint64_t end) {
  if (ranges_.capacity() == 0) ranges_.reserve(4);  // most sets hold a few: one allocation
  // The first range that may touch [start, end): the first that reaches |start|.
  auto first = std::lower_bound(ranges_.begin(), ranges_.end(), start,
                                [](const Range& r, uint64_t at) { return r.end < at; });
  auto last = first;
  for (; last != ranges_.end() && last->start <= end; ++last) {
    start = std::min(start, last->start);
    end = std::max(end, last->end);
  }
  if (first == last) {
    ranges_.insert(first, Range{start, end});
    return;
  }
  *first = Range{start, end};
  ranges_.erase(first + 1, last);
}

uint64_t ByteRanges::first_fit(uint64_t from, uint64_t size) const {
  // Ranges are disjoint and sorted, so the last one starting before from + size reaches
  // furthest among those that could meet [from, from + size).
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), from + size,
                             [](const Range& r, uint64_t at) { return r.start < at; });
  if (it == ranges_.begin()) return from;
  --it;
  if (it->end <= from) return from;
  uint64_t x = it->end;
  for (++it; it != ranges_.end() && it->start < x + size; ++it) x = it->end;
  return x;
}

PlacedIndex::PlacedIndex(size_t ops) : leaves_(1) {
  while (leaves_ < ops) leaves_ *= 2;
  covering_.resize(2 * leaves_);
  starting_.resize(2 * leaves_);
}

void PlacedIndex::add(size_t from, size_t to, uint64_t start, uint64_t end) {
  if (start == end) return;  // no bytes: meets nothing
  for (size_t node = leaves_ + from; node >= 1; node /= 2) starting_[node].add(start, end);
  for (size_t lo = leaves_ + from, hi = leaves_ + to + 1; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) covering_[lo++].add(start, end);
    if (hi & 1) covering_[--hi].add(start, end);
  }
}

uint64_t PlacedIndex::lowest_fit(size_t from, size_t to, uint64_t size) {
  if (size == 0) return 0;
  std::vector<const ByteRanges*>& sets = scratch_;
  sets.clear();
  for (size_t node = leaves_ + from; node >= 1; node /= 2) {
    if (!covering_[node].empty()) sets.push_back(&covering_[node]);
  }
  for (size_t lo = leaves_ + from + 1, hi = leaves_ + to + 1; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) {
      if (!starting_[lo].empty()) sets.push_back(&starting_[lo]);
      ++lo;
    }
    if (hi & 1) {
      --hi;
      if (!starting_[hi].empty()) sets.push_back(&starting_[hi]);
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
