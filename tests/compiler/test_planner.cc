// Planner: a case worked out on paper, then randomised properties (no overlap, >= lower bound).
#include "tests/cmocka_cpp.h"

#include <cstdio>
#include <random>
#include <vector>

#include "plan/overlap_check.h"
#include "compiler/planner.h"

using remat::PlacedBuffer;
using remat::compiler::ArenaPlanner;

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
  std::printf("worst planner efficiency (lower bound / arena) over 200 random cases: %.3f\n", worst);
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
      cmocka_unit_test(overlap_checker_finds_two_live_buffers_sharing_bytes),
      cmocka_unit_test(overlap_checker_allows_shared_bytes_at_different_times),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
