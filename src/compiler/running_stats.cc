// Running statistics of batch norms, updated once per step after the backward pass.
#include "compiler/running_stats.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/data_parallel.h"

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

void average_running_stats(Graph& graph) {
  std::vector<int> buffers;
  for (const BatchNormBuffers& bn : graph.batch_norms) {
    buffers.push_back(bn.running_mean);
    buffers.push_back(bn.running_var);
  }
  int64_t bucket = 0;
  for (const Op& op : graph.ops) bucket += op.code == OpCode::kAllreduceStart ? 1 : 0;
  for (size_t first = 0; first < buffers.size(); first += kMaxBucketTensors) {
    const size_t last = std::min(buffers.size(), first + kMaxBucketTensors);
    const std::vector<int> part(buffers.begin() + static_cast<long>(first),
                                buffers.begin() + static_cast<long>(last));
    const int source = graph.batch_norms.front().op;
    graph.add_op(OpCode::kAllreduceStart, part, {}, {bucket}, {}, Phase::kUpdate, source);
    graph.add_op(OpCode::kAllreduceWait, part, {}, {bucket}, {}, Phase::kUpdate, source);
    ++bucket;
  }
}

}  // namespace compiler
}  // namespace remat
