// The arena planner's index of placed buffers: the lowest offset free over a span of ops.
//
// A placed buffer is a rectangle: ops [from, to] by bytes [start, end). The planner asks, for
// a new buffer, the lowest offset x at which [x, x + size) meets no placed buffer live at any
// op of its own span. Looking at every placed buffer makes planning quadratic; this index
// keeps the placed byte ranges in two segment trees over op indices, each node a set of
// merged byte ranges:
//
//   covering: a buffer is added to the O(log T) nodes whose ops its span covers exactly
//             (those on the path from op i to the root hold every buffer live at op i)
//   starting: a buffer is added to the O(log T) nodes above the op where it starts
//
// A buffer meets the span [from, to] when it is live at op |from| (covering, path of |from|) or
// starts in (from, to] (starting, O(log T) nodes): so a query reads O(log T) range sets and
// takes the lowest offset that is free in all of them.
#ifndef REMAT_COMPILER_PLACED_INDEX_H_
#define REMAT_COMPILER_PLACED_INDEX_H_

#include <stddef.h>
#include <stdint.h>

#include <vector>

namespace remat {
namespace compiler {

/// Disjoint byte ranges [start, end); ranges that touch or overlap are merged when added.
class ByteRanges {
 public:
  /// Adds [|start|, |end|) (|start| < |end|).
  void add(uint64_t start, uint64_t end);
  /// The smallest x >= |from| such that [x, x + |size|) shares no byte with a range
  /// (|size| > 0).
  uint64_t first_fit(uint64_t from, uint64_t size) const;
  /// Whether no range was added.
  bool empty() const { return ranges_.empty(); }

 private:
  struct Range {
    uint64_t start, end;
  };
  // Sorted by start, so by end too (disjoint, never touching). A sorted array rather than a
  // tree: most sets hold a few ranges, and a heap node per range made the planner's adds and
  // queries about 40% of a spilling `remat size --max-batch` search.
  std::vector<Range> ranges_;
};

/// Placed buffers by op span and byte range; ops are numbered 0 .. |ops| - 1.
class PlacedIndex {
 public:
  /// An empty index over ops 0 .. |ops| - 1.
  explicit PlacedIndex(size_t ops);
  /// Records bytes [|start|, |end|) as taken from op |from| to op |to| (inclusive, from <= to).
  void add(size_t from, size_t to, uint64_t start, uint64_t end);
  /// The lowest offset x such that [x, x + |size|) meets no byte range recorded for an op
  /// span that meets [|from|, |to|]. A zero |size| meets nothing: 0.
  uint64_t lowest_fit(size_t from, size_t to, uint64_t size);

 private:
  size_t leaves_;  // a power of two >= ops; node 1 is the root, leaf i is node leaves_ + i
  std::vector<ByteRanges> covering_, starting_;
  std::vector<const ByteRanges*> scratch_;  // the sets one query reads
};

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_PLACED_INDEX_H_
