// The sqrt strategy (Chen et al.'s Algorithm 3 over a grid of budgets): its arena is never larger
// than the evenly spaced split points', it balances a ResNet's segments by bytes, and on small
// graphs it comes close to the smallest arena of any set of split points (brute force).
#include "tests/cmocka_cpp.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "compiler/autodiff.h"
#include "compiler/compiler.h"
#include "compiler/planner.h"
#include "compiler/running_stats.h"
#include "compiler/schedule.h"
#include "compiler/strategies/sqrt.h"
#include "compiler/templates/templates.h"
#include "tests/compiler/training_graph.h"

namespace {

using Built = TrainingGraph;

Built build(const std::string& model, int batch) {
  return training_graph(model, batch, "sgd:lr=0.01");
}

uint64_t arena_with(const Built& b, const std::vector<int>& checkpoints) {
  remat::compiler::Graph g = b.graph;
  remat::compiler::apply_recompute(g, b.forward_ops, checkpoints);
  return remat::compiler::plan_memory(g, 64).arena_size;
}

const char* const kModels[] = {
    "mlp:layers=12,width=32,in=16,classes=4",
    "resmlp:layers=8,width=32,in=16,classes=4",
    "transformer:layers=4,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3",
    "resnet:depth=14,width=8,in=3x16x16,classes=4",
    "dscnn:blocks=4,width=8,in=1x12x6,classes=4",
    "cnn:channels=4x8x16,in=2x16x16,classes=3",
};

}  // namespace

// Chen's evenly spaced variant (round(sqrt(n)) of the n split points, by count) is one of the
// schedules sqrt plans, so its arena bounds sqrt's.
static void sqrt_plans_no_larger_than_evenly_spaced_split_points(void**) {
  for (const char* model : kModels) {
    const Built b = build(model, 8);
    const std::vector<int> splits = remat::compiler::split_points(b.graph, b.forward_ops);
    const size_t n = splits.size();
    const size_t k = static_cast<size_t>(std::lround(std::sqrt(static_cast<double>(n))));
    std::vector<int> even;
    for (size_t j = 1; j <= k; ++j) even.push_back(splits[j * n / (k + 1)]);
    const uint64_t sqrt =
        arena_with(b, remat::compiler::sqrt_checkpoints(b.graph, b.forward_ops, 64));
    const uint64_t evenly = arena_with(b, even);
    std::printf("%s: %zu split points; sqrt arena %llu, evenly spaced %llu\n", model, n,
                static_cast<unsigned long long>(sqrt), static_cast<unsigned long long>(evenly));
    assert_true(n >= 4);
    assert_true(sqrt <= evenly);
  }
}

// Brute force over every set of split points, on models with at most 15 of them: sqrt's arena is
// within kNearOptimal of the smallest.
static void sqrt_comes_close_to_the_best_set_of_split_points(void**) {
  constexpr double kNearOptimal = 1.05;
  int compared = 0;
  for (const char* model :
       {"resmlp:layers=8,width=32,in=16,classes=4", "cnn:channels=4x8x16,in=2x16x16,classes=3",
        "resnet:depth=8,width=8,in=3x16x16,classes=4", "dscnn:blocks=1,width=8,in=1x12x6,classes=4",
        "transformer:layers=1,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3"}) {
    const Built b = build(model, 8);
    const std::vector<int> splits = remat::compiler::split_points(b.graph, b.forward_ops);
    if (splits.size() > 15)
      fail_msg("%s: %zu split points, too many to try every set", model, splits.size());
    uint64_t best = UINT64_MAX;
    for (uint32_t mask = 0; mask < (1u << splits.size()); ++mask) {
      std::vector<int> kept;
      for (size_t i = 0; i < splits.size(); ++i) {
        if (mask & (1u << i)) kept.push_back(splits[i]);
      }
      best = std::min(best, arena_with(b, kept));
    }
    const uint64_t sqrt =
        arena_with(b, remat::compiler::sqrt_checkpoints(b.graph, b.forward_ops, 64));
    std::printf("%s: %zu split points; sqrt arena %llu, smallest of any set %llu (%.3fx)\n", model,
                splits.size(), static_cast<unsigned long long>(sqrt),
                static_cast<unsigned long long>(best),
                static_cast<double>(sqrt) / static_cast<double>(best));
    if (static_cast<double>(sqrt) > kNearOptimal * static_cast<double>(best)) {
      fail_msg("%s: sqrt's arena %llu is over %.2fx the smallest, %llu", model,
               static_cast<unsigned long long>(sqrt), kNearOptimal,
               static_cast<unsigned long long>(best));
    }
    ++compared;
  }
  assert_int_equal(compared, 5);
}

// ResNet-20 on 32x32 images, the convolution issue's target: sqrt keeps at most 0.35 of none's
// arena, and more first-stage block boundaries than last-stage ones (a first-stage block holds
// 4x the bytes).
static void sqrt_balances_a_resnet_by_bytes(void**) {
  remat::compiler::CompileOptions o;
  o.model = "resnet:depth=20,width=16,in=3x32x32,classes=10";
  o.batch = 64;
  o.strategy = "none";
  const uint64_t none = remat::compiler::compile(o).report.arena_bytes;
  o.strategy = "sqrt";
  const auto sqrt = remat::compiler::compile(o).report;
  int first = 0, last = 0;
  for (const std::string& name : sqrt.checkpoints) {
    first += name.compare(0, 7, "layer1.") == 0;
    last += name.compare(0, 7, "layer3.") == 0;
  }
  std::printf("none %llu, sqrt %llu (%.3f); %zu checkpoints, %d in stage 1, %d in stage 3\n",
              static_cast<unsigned long long>(none),
              static_cast<unsigned long long>(sqrt.arena_bytes),
              static_cast<double>(sqrt.arena_bytes) / static_cast<double>(none),
              sqrt.checkpoints.size(), first, last);
  assert_true(static_cast<double>(sqrt.arena_bytes) <= 0.35 * static_cast<double>(none));
  assert_true(first > last);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sqrt_plans_no_larger_than_evenly_spaced_split_points),
      cmocka_unit_test(sqrt_comes_close_to_the_best_set_of_split_points),
      cmocka_unit_test(sqrt_balances_a_resnet_by_bytes),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
