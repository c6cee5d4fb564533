// The selective strategy (src/compiler/schedule.cc): it keeps the products with a weight, the
// normalisations and the lookups, and a kept product moves down its chain of single-reader ops
// (bias add, an imported model's head split, residual sum), so that on a transformer only the
// attention core and the activations are recomputed, within none's arena.
#include "tests/cmocka_cpp.h"

#include <set>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/planner.h"
#include "compiler/schedule.h"
#include "tests/compiler/training_graph.h"

namespace {

using remat::OpCode;
using remat::compiler::Graph;
using remat::compiler::Phase;

using Built = TrainingGraph;

const char kTransformer[] =
    "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3";

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Selective on the transformer with |attention|: see the test below.
void check_selective(remat::compiler::AttentionKernel attention) {
  const bool fused = attention == remat::compiler::AttentionKernel::kFused;
  Built b = training_graph(kTransformer, 4, "sgd:lr=0.01", attention);
  const std::vector<int> kept =
      remat::compiler::choose_checkpoints(b.graph, b.forward_ops, "selective");
  std::set<std::string> names;
  for (int t : kept) names.insert(b.graph.tensors[t].name);
  for (const char* head : {"query.out", "key.out", "value.out"}) {
    int found = 0;
    for (const std::string& name : names) found += ends_with(name, std::string(".") + head) ? 1 : 0;
    if (found != 2) fail_msg("selective keeps %d of the 2 layers' %s", found, head);
  }
  const uint64_t none_arena = remat::compiler::plan_memory(Built(b).graph, 64).arena_size;
  remat::compiler::apply_recompute(b.graph, b.forward_ops, kept);
  std::set<OpCode> recomputed;
  for (const auto& op : b.graph.ops) {
    if (op.phase == Phase::kRecompute) recomputed.insert(op.code);
  }
  assert_true(recomputed.count(OpCode::kSoftmax) == (fused ? 0 : 1));
  assert_true(recomputed.count(OpCode::kAttention) == (fused ? 1 : 0));
  assert_true(recomputed.count(OpCode::kGelu) == 1);
  assert_true(recomputed.count(OpCode::kBiasAdd) == 0);
  for (const auto& op : b.graph.ops) {  // no linear layer (a product with a weight) is recomputed
    if (op.phase != Phase::kRecompute || op.code != OpCode::kMatMul) continue;
    for (int in : op.inputs) assert_true(b.graph.tensors[in].role != remat::compiler::Role::kParam);
  }
  assert_true(recomputed.count(OpCode::kAdd) == 0);
  assert_true(recomputed.count(OpCode::kLayerNorm) == 0);
  assert_true(remat::compiler::plan_memory(b.graph, 64).arena_size < none_arena);
}

}  // namespace

// The products q, k and v are kept (the attention core's backward reads their heads in place),
// and the residual sums rather than the products feeding them; so no residual sum or bias add
// (the embeddings' positions) is recomputed. The attention core is recomputed: its softmax (and
// products) unfused, the one attention op fused.
static void selective_keeps_the_heads_and_recomputes_no_bias_add_or_sum(void**) {
  for (const auto attention :
       {remat::compiler::AttentionKernel::kUnfused, remat::compiler::AttentionKernel::kFused}) {
    check_selective(attention);
  }
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(selective_keeps_the_heads_and_recomputes_no_bias_add_or_sum),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
