// Running statistics of batch norms, updated once per step after the backward pass.
#include "compiler/running_stats.h"

#include <string>

namespace remat {
namespace compiler {

void append_running_stat_updates(Graph& graph) {
  for (const BatchNormBuffers& bn : graph.batch_norms) {
    const Op op = graph.ops[bn.op];  // a copy: add_op grows graph.ops
    const Tensor& x = graph.tensors[op.inputs[0]];
    const int64_t per_channel = x.numel() / x.shape[1];
    if (per_channel < 2) {
      throw CompileError(
          "batch norm '" + graph.tensors[op.outputs[0]].name + "' sees " +
          std::to_string(per_channel) +
          " value per channel in a batch: its variance is undefined (use a batch of 2 or more)");
    }
    const float correction =
        static_cast<float>(static_cast<double>(per_channel) / static_cast<double>(per_channel - 1));
    namespace a = attr::running_stat_update;
    graph.add_op(OpCode::kRunningStatUpdate, {bn.running_mean, op.outputs[1]}, {bn.running_mean},
                 {}, named({{a::momentum, bn.momentum}, {a::correction, 1.0f}}), Phase::kUpdate,
                 bn.op);
    graph.add_op(OpCode::kRunningStatUpdate, {bn.running_var, op.outputs[2]}, {bn.running_var}, {},
                 named({{a::momentum, bn.momentum}, {a::correction, correction}}), Phase::kUpdate,
                 bn.op);
    graph.add_op(OpCode::kIncrement, {bn.num_batches_tracked}, {bn.num_batches_tracked}, {}, {},
                 Phase::kUpdate, bn.op);
  }
}

}  // namespace compiler
}  // namespace remat
