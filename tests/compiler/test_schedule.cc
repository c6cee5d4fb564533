// The recomputation schedule (compiler/schedule.h) on graphs small enough to work out by hand:
// for manual checkpoint sets, exactly which forward ops are recomputed and their FLOPs, and for
// every strategy that no op of the last segment (after the last checkpoint) is recomputed, its
// activations being alive when the backward pass starts.
//
// The hand rule: an op of a non-last segment is recomputed when the backward pass reads one of
// its outputs that is not a checkpoint, or when a recomputed op reads it. What the backward ops
// read (compiler/autodiff.cc): a product's gradient reads its inputs (dW = x^T dy), relu_grad
// its output, gelu_grad its input, layernorm_grad its input, mean and rstd, attention_grad its
// q, k, v, context and lse; add's and bias_add's gradients read nothing of the forward pass.
#include "tests/cmocka_cpp.h"

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "compiler/schedule.h"
#include "compiler/strategies/sqrt.h"
#include "plan/ops.h"
#include "tests/compiler/training_graph.h"

namespace {

using remat::compiler::Phase;

// The forward ops (by index) a schedule recomputes, and their FLOPs.
struct Recomputed {
  std::set<int> sources;
  double flops = 0;
};

Recomputed recompute(const TrainingGraph& b, const std::vector<std::string>& checkpoint_names) {
  remat::compiler::Graph g = b.graph;
  std::vector<int> checkpoints;
  for (const std::string& name : checkpoint_names) {
    const int t = g.find(name);
    if (t < 0) fail_msg("no tensor '%s'", name.c_str());
    checkpoints.push_back(t);
  }
  remat::compiler::apply_recompute(g, b.forward_ops, checkpoints);
  Recomputed r;
  for (const auto& op : g.ops) {
    if (op.phase != Phase::kRecompute) continue;
    if (!r.sources.insert(op.source).second) fail_msg("op %d recomputed twice", op.source);
    r.flops += op.flops;
  }
  return r;
}

// Checks |got| against the hand-worked |sources| and FLOPs (the forward ops' own estimates).
void expect_recomputed(const TrainingGraph& b, const Recomputed& got, const std::set<int>& sources,
                       const char* what) {
  double flops = 0;
  for (int i : sources) flops += b.graph.ops[static_cast<size_t>(i)].flops;
  std::string listed;
  for (int i : got.sources) listed += " " + std::to_string(i);
  std::printf("%s: recomputed ops%s, %.0f FLOPs\n", what, listed.c_str(), got.flops);
  if (got.sources != sources)
    fail_msg("%s: recomputed ops%s, not as worked out", what, listed.c_str());
  if (got.flops != flops) fail_msg("%s: %.0f recomputed FLOPs, not %.0f", what, got.flops, flops);
}

}  // namespace

// mlp, 6 layers: ops 2i (matmul of layer i) and 2i + 1 (its relu), then the head (12) and the
// loss (13).
static void mlp_recomputes_the_ops_worked_out_by_hand(void**) {
  const TrainingGraph b = training_graph("mlp:layers=6,width=8,in=4,classes=3", 2, "sgd:lr=0.01");
  // Checkpoints fc1.relu, fc3.relu: segments ops 0-3, 4-7 and the last, 8-13. fc0.relu (dW of
  // layer 1, relu_grad of layer 0) needs ops 0 and 1; fc1.out is read by nothing backward (relu
  // reads its output, a checkpoint), so op 2 is not recomputed; likewise 4, 5 and not 6.
  expect_recomputed(b, recompute(b, {"fc1.relu", "fc3.relu"}), {0, 1, 4, 5}, "mlp fc1, fc3");
  // Checkpoints fc0.relu, fc3.relu: the first segment (ops 0, 1) needs nothing (fc0.out is read
  // by no backward op); the second needs fc1.relu and fc2.relu.
  expect_recomputed(b, recompute(b, {"fc0.relu", "fc3.relu"}), {2, 3, 4, 5}, "mlp fc0, fc3");
  // No checkpoint: one segment, the last, nothing recomputed.
  expect_recomputed(b, recompute(b, {}), {}, "mlp none");
}

// resmlp, 4 blocks: op 0, 1 the input layer; block i is matmul 2 + 3i, relu 3 + 3i, add 4 + 3i.
static void resmlp_recomputes_the_ops_worked_out_by_hand(void**) {
  const TrainingGraph b =
      training_graph("resmlp:layers=4,width=8,in=4,classes=3", 2, "sgd:lr=0.01");
  // Checkpoint fc1.residual (op 7's output): ops 0-6 are read backward or feed what is
  // (input.relu, fc0.relu, fc0.residual the input of block 1's product, fc1.relu); op 7 itself
  // produced the checkpoint and nothing else.
  expect_recomputed(b, recompute(b, {"fc1.residual"}), {0, 1, 2, 3, 4, 5, 6}, "resmlp fc1");
  // Checkpoints input.relu and fc2.residual (op 10's output): the first segment (ops 0, 1)
  // needs nothing; in the second, every relu output and every residual that feeds a product is
  // read backward, so ops 2-9, all but op 10, which produced only the checkpoint.
  expect_recomputed(b, recompute(b, {"input.relu", "fc2.residual"}), {2, 3, 4, 5, 6, 7, 8, 9},
                    "resmlp input, fc2");
}

// transformer, 2 layers: ops 0-2 the embeddings, 3-14 layer 0, 15-26 layer 1, then the pooler
// and the head. A layer norm's output as the checkpoint still leaves its mean and rstd to
// recompute for its gradient, so its whole segment comes back.
static void transformer_recomputes_the_ops_worked_out_by_hand(void**) {
  const TrainingGraph b = training_graph(
      "transformer:layers=2,hidden=8,heads=2,ffn=16,seq=4,vocab=10,classes=3", 2, "sgd:lr=0.01");
  std::set<int> first_layer;
  for (int i = 0; i <= 14; ++i) first_layer.insert(i);
  expect_recomputed(b, recompute(b, {"encoder.layer.0.output.LayerNorm.out"}), first_layer,
                    "transformer layer 0");
  // Checkpoint the residual before layer 0's last layer norm instead (op 13's output): op 13
  // produced only the checkpoint, and op 12's output (the second dense product's) is read by
  // nothing backward (the add's gradient reads nothing, the product's dW its input, op 11's
  // gelu): ops 0-11.
  std::set<int> before_add;
  for (int i = 0; i <= 11; ++i) before_add.insert(i);
  expect_recomputed(b, recompute(b, {"encoder.layer.0.output.residual"}), before_add,
                    "transformer layer 0 residual");
}

// Whatever the checkpoints, the last segment's activations are alive when the backward pass
// starts: no op after the last checkpoint's producer is recomputed (sqrt's sets here).
static void no_op_after_the_last_checkpoint_is_recomputed(void**) {
  for (const char* model :
       {"mlp:layers=12,width=32,in=16,classes=4", "resmlp:layers=8,width=32,in=16,classes=4",
        "transformer:layers=4,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3"}) {
    TrainingGraph b = training_graph(model, 8, "sgd:lr=0.01");
    const std::vector<int> checkpoints =
        remat::compiler::sqrt_checkpoints(b.graph, b.forward_ops, 64);
    int last = -1;
    for (size_t i = 0; i < b.forward_ops; ++i) {
      for (int t : b.graph.ops[i].outputs) {
        for (int c : checkpoints) last = t == c ? static_cast<int>(i) : last;
      }
    }
    remat::compiler::apply_recompute(b.graph, b.forward_ops, checkpoints);
    int recomputed = 0;
    for (const auto& op : b.graph.ops) {
      if (op.phase != Phase::kRecompute) continue;
      ++recomputed;
      if (op.source > last)
        fail_msg("%s: op %d recomputed after the last checkpoint's producer (op %d)", model,
                 op.source, last);
    }
    std::printf("%s: %zu checkpoints, the last made by op %d; %d ops recomputed\n", model,
                checkpoints.size(), last, recomputed);
    assert_true(recomputed > 0);
  }
}

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mlp_recomputes_the_ops_worked_out_by_hand),
      cmocka_unit_test(resmlp_recomputes_the_ops_worked_out_by_hand),
      cmocka_unit_test(transformer_recomputes_the_ops_worked_out_by_hand),
      cmocka_unit_test(no_op_after_the_last_checkpoint_is_recomputed),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
