// What the compiler tests share: a template's forward graph with its backward pass, updates and
// running-stat updates, as compile() builds it before a strategy rewrites it.
#ifndef REMAT_TESTS_COMPILER_TRAINING_GRAPH_H_
#define REMAT_TESTS_COMPILER_TRAINING_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include <string>

#include "compiler/autodiff.h"
#include "compiler/graph.h"
#include "compiler/optimizer.h"
#include "compiler/running_stats.h"
#include "compiler/templates/templates.h"

/// A training step's graph and how many of its ops are the forward pass.
struct TrainingGraph {
  remat::compiler::Graph graph;
  size_t forward_ops = 0;
};

/// |model| at |batch| with |optimizer|'s updates and the non-finite checks; a transformer's
/// attention as |attention| says.
inline TrainingGraph training_graph(
    const std::string& model, int64_t batch, const char* optimizer,
    remat::compiler::AttentionKernel attention = remat::compiler::AttentionKernel::kFused) {
  TrainingGraph t;
  t.graph = remat::compiler::build_template(model, batch, attention);
  t.forward_ops = t.graph.ops.size();
  remat::compiler::append_backward_and_updates(t.graph, remat::compiler::parse_optimizer(optimizer),
                                               remat::compiler::FiniteChecks::kOn);
  remat::compiler::append_running_stat_updates(t.graph);
  return t;
}

#endif  // REMAT_TESTS_COMPILER_TRAINING_GRAPH_H_
