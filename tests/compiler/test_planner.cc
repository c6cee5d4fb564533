// Planner: a case worked out on paper, then randomised properties (no overlap, >= lower bound,
// the same offsets as a plain quadratic reference).
#include "tests/cmocka_cpp.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "plan/overlap_check.h"
#include "compiler/placed_index.h"
#include "compiler/planner.h"

using remat::PlacedBuffer;
using remat::compiler::ArenaPlanner;
using remat::compiler::ByteRanges;
using remat::compiler::CompileError;

namespace {

struct RefBuffer {
  uint64_t size;  // aligned
  int first, last;
  uint64_t offset;
};

// The planner as it was first written: largest first (then earliest first, then in order
// added); each buffer sorts the placed buffers that meet it in time by offset and takes the
// lowest gap. Quadratic, and obviously what the docs say: ArenaPlanner must give the same
// offsets, byte for byte, since plans (and the arena sizes the docs quote) depend on them.
uint64_t reference_plan(std::vector<RefBuffer>& buffers) {
  std::vector<int> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<int> placed;
  uint64_t arena = 0;
  for (int id : order) {
    RefBuffer& b = buffers[id];
    std::vector<std::pair<uint64_t, uint64_t>> taken;
    for (int other : placed) {
      const RefBuffer& o = buffers[other];
      if (o.first <= b.last && b.first <= o.last) taken.push_back({o.offset, o.offset + o.size});
    }
    std::sort(taken.begin(), taken.end());
    uint64_t candidate = 0;
    for (const auto& span : taken) {
      if (span.first >= candidate + b.size) break;
      candidate = std::max(candidate, span.second);
    }
    b.offset = candidate;
    arena = std::max(arena, candidate + b.size);
    placed.push_back(id);
  }
  return arena;
}

// Random lifetimes in one of a few shapes that stress different parts of the planner.
struct Shape {
  const char* name;
  int ops;            // lifetimes fall in -1 .. ops
  int max_length;     // longest lifetime in ops
  int sizes;          // distinct sizes (few: many ties)
  uint64_t max_size;  // bytes
  int zero_percent;   // share of zero-byte buffers
};

const Shape kShapes[] = {
    {"short lives, many sizes", 200, 8, 1000, 5000, 0},
    {"long lives, few sizes (deep-model activations)", 300, 300, 3, 512, 0},
    {"dense: everything meets everything", 4, 4, 5, 4096, 0},
    {"ties and zero-byte buffers", 60, 20, 2, 128, 15},
    {"wide spread of sizes", 500, 60, 100000, uint64_t{1} << 30, 2},
};

}  // namespace

// Buffers (size, first..last): B 200 (1..2), A 100 (0..1), C 100 (2..3), D 50 (0..3).
// Largest first: B -> 0; A meets B at op 1 -> 200; C meets B at op 2 -> 200 (A is dead by
// then); D meets all three -> 300. Peak live bytes at ops 1 and 2: 350 = the arena.
static void hand_computed_case_gets_the_offsets_worked_out_on_paper(void**) {
  ArenaPlanner p(1);
  const int a = p.add_buffer(100, 0, 1);
  const int b = p.add_buffer(200, 1, 2);
  const int c = p.add_buffer(100, 2, 3);
  const int d = p.add_buffer(50, 0, 3);
  p.plan();
  assert_int_equal(p.offset(b), 0);
  assert_int_equal(p.offset(a), 200);
  assert_int_equal(p.offset(c), 200);
  assert_int_equal(p.offset(d), 300);
  assert_int_equal(p.size(), 350);
  assert_int_equal(p.lower_bound(), 350);
}

static void alignment_rounds_every_offset_and_size_up(void**) {
  ArenaPlanner p(64);
  const int a = p.add_buffer(1, 0, 0);
  const int b = p.add_buffer(65, 0, 0);
  p.plan();
  assert_int_equal(p.offset(b), 0);
  assert_int_equal(p.offset(a), 128);
  assert_int_equal(p.size(), 192);
}

static void random_plans_never_overlap_and_never_beat_the_lower_bound(void**) {
  std::mt19937 rng(7);
  double worst = 1.0;
  for (int trial = 0; trial < 200; ++trial) {
    ArenaPlanner p(64);
    const int n = 1 + static_cast<int>(rng() % 120);
    std::vector<PlacedBuffer> buffers;
    for (int i = 0; i < n; ++i) {
      const int first = static_cast<int>(rng() % 50) - 1;
      const int last = first + static_cast<int>(rng() % 20);
      const uint64_t size = 1 + rng() % 5000;
      p.add_buffer(size, first, last);
      buffers.push_back(PlacedBuffer{0, (size + 63) / 64 * 64, first, last});
    }
    p.plan();
    for (int i = 0; i < n; ++i) {
      buffers[i].offset = p.offset(i);
      assert_true(buffers[i].offset % 64 == 0);
      assert_true(buffers[i].offset + buffers[i].size <= p.size());
    }
    std::vector<uint32_t> order(n);
    uint32_t x = 0, y = 0;
    assert_true(remat::no_overlap_in_time_and_space(buffers.data(), n, order.data(), &x, &y));
    assert_true(p.size() >= p.lower_bound());
    const double ratio = static_cast<double>(p.lower_bound()) / static_cast<double>(p.size());
    if (ratio < worst) worst = ratio;
  }
  std::printf("worst planner efficiency (lower bound / arena) over 200 random cases: %.3f\n",
              worst);
}

static void random_plans_give_the_same_offsets_as_the_reference_planner(void**) {
  std::mt19937_64 rng(12);
  int compared = 0;
  for (const Shape& shape : kShapes) {
    for (int trial = 0; trial < 60; ++trial) {
      const uint64_t alignment = trial % 3 == 0 ? 1 : trial % 3 == 1 ? 64 : 256;
      const int n = 1 + static_cast<int>(rng() % 400);
      std::vector<uint64_t> sizes(static_cast<size_t>(shape.sizes));
      for (uint64_t& size : sizes) size = 1 + rng() % shape.max_size;
      ArenaPlanner p(alignment);
      std::vector<RefBuffer> ref;
      std::vector<PlacedBuffer> placed;
      for (int i = 0; i < n; ++i) {
        const int first = static_cast<int>(rng() % static_cast<uint64_t>(shape.ops + 2)) - 1;
        const int last =
            std::min(shape.ops,
                     first + static_cast<int>(rng() % static_cast<uint64_t>(shape.max_length + 1)));
        const uint64_t size =
            static_cast<int>(rng() % 100) < shape.zero_percent ? 0 : sizes[rng() % sizes.size()];
        p.add_buffer(size, first, last);
        const uint64_t aligned = (size + alignment - 1) / alignment * alignment;
        ref.push_back(RefBuffer{aligned, first, last, 0});
        placed.push_back(PlacedBuffer{0, aligned, first, last});
      }
      p.plan();
      const uint64_t arena = reference_plan(ref);
      for (int i = 0; i < n; ++i) {
        if (p.offset(i) != ref[i].offset) {
          fail_msg(
              "%s, trial %d: buffer %d (%llu bytes, ops %d..%d) at %llu, the reference puts it at "
              "%llu",
              shape.name, trial, i, static_cast<unsigned long long>(ref[i].size), ref[i].first,
              ref[i].last, static_cast<unsigned long long>(p.offset(i)),
              static_cast<unsigned long long>(ref[i].offset));
        }
        placed[i].offset = p.offset(i);
      }
      assert_int_equal(p.size(), arena);
      std::vector<uint32_t> order(n);
      uint32_t x = 0, y = 0;
      assert_true(remat::no_overlap_in_time_and_space(placed.data(), n, order.data(), &x, &y));
      ++compared;
    }
  }
  std::printf("%d random plans identical to the reference planner\n", compared);
}

static void a_buffer_that_ends_before_it_starts_is_refused(void**) {
  ArenaPlanner p(64);
  try {
    p.add_buffer(64, 5, 4);
  } catch (const CompileError& e) {
    assert_non_null(std::strstr(e.what(), "from op 5 to op 4"));
    return;
  }
  fail_msg("add_buffer accepted ops 5..4");
}

// Touching ranges merge; a fit may start where a range ends and end where the next begins.
static void byte_ranges_merge_touching_ranges_and_find_the_lowest_fit(void**) {
  ByteRanges r;
  r.add(100, 200);
  r.add(300, 400);
  assert_int_equal(r.first_fit(0, 100), 0);
  assert_int_equal(r.first_fit(0, 101), 400);  // [0, 101) meets [100, 200)
  assert_int_equal(r.first_fit(150, 100), 200);
  assert_int_equal(r.first_fit(150, 101), 400);
  r.add(200, 300);  // fills the gap: one range [100, 400)
  assert_int_equal(r.first_fit(0, 100), 0);
  assert_int_equal(r.first_fit(1, 100), 400);
  r.add(50, 120);
  assert_int_equal(r.first_fit(0, 50), 0);
  assert_int_equal(r.first_fit(0, 51), 400);
}

static void overlap_checker_finds_two_live_buffers_sharing_bytes(void**) {
  const PlacedBuffer buffers[] = {{0, 64, 0, 3}, {128, 64, 0, 9}, {32, 64, 3, 4}};
  uint32_t order[3], a = 0, b = 0;
  assert_false(remat::no_overlap_in_time_and_space(buffers, 3, order, &a, &b));
  assert_int_equal(a, 0);
  assert_int_equal(b, 2);
}

static void overlap_checker_allows_shared_bytes_at_different_times(void**) {
  const PlacedBuffer buffers[] = {{0, 64, 0, 3}, {0, 64, 4, 9}, {64, 64, 0, 9}};
  uint32_t order[3], a = 0, b = 0;
  assert_true(remat::no_overlap_in_time_and_space(buffers, 3, order, &a, &b));
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hand_computed_case_gets_the_offsets_worked_out_on_paper),
      cmocka_unit_test(alignment_rounds_every_offset_and_size_up),
      cmocka_unit_test(random_plans_never_overlap_and_never_beat_the_lower_bound),
      cmocka_unit_test(random_plans_give_the_same_offsets_as_the_reference_planner),
      cmocka_unit_test(a_buffer_that_ends_before_it_starts_is_refused),
      cmocka_unit_test(byte_ranges_merge_touching_ranges_and_find_the_lowest_fit),
      cmocka_unit_test(overlap_checker_finds_two_live_buffers_sharing_bytes),
      cmocka_unit_test(overlap_checker_allows_shared_bytes_at_different_times),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
