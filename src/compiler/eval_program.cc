// The eval program: the forward ops again, on tensors of their own, without dropout (dropout
// ops become their input; fused attention's p becomes 0).
#include "compiler/eval_program.h"

#include <string>

namespace remat {
namespace compiler {
namespace {

// Batch norm |op| (forward op |index|) in evaluation: normalised with its running statistics;
// its batch statistics get no copies.
void append_batch_norm_inference(Graph& graph, const Op& op, int index, std::vector<int>& in_eval) {
  const BatchNormBuffers* buffers = nullptr;
  for (const BatchNormBuffers& bn : graph.batch_norms) {
    if (bn.op == index) buffers = &bn;
  }
  if (buffers == nullptr)
    throw CompileError("eval program: batch norm op " + std::to_string(index) +
                       " has no running statistics");
  const std::vector<int> inputs{in_eval[op.inputs[0]], op.inputs[1], op.inputs[2],
                                buffers->running_mean, buffers->running_var};
  const Tensor y = graph.tensors[op.outputs[0]];
  in_eval[op.outputs[0]] =
      graph.add_tensor(graph.unique_name(y.name + "@eval"), y.dtype, y.shape, Role::kActivation);
  graph.add_op(OpCode::kBatchNormInference, inputs, {in_eval[op.outputs[0]]}, {}, op.fattrs,
               Phase::kEval, index);
}

}  // namespace

void append_eval_program(Graph& graph, const std::vector<Op>& forward) {
  int loss_op = -1;
  for (size_t i = 0; i < forward.size(); ++i) {
    for (int t : forward[i].outputs) {
      if (t == graph.loss) loss_op = static_cast<int>(i);
    }
  }
  if (loss_op < 0) throw CompileError("eval program: no forward op writes the loss");
  const bool cross_entropy = forward[loss_op].code == OpCode::kSoftmaxCrossEntropy;
  const int prediction = forward[loss_op].inputs.at(0);

  // What each forward tensor is in the eval program: inputs, labels, parameters and constants
  // (state with initial data: an imported model's constant ids) are shared; every tensor a
  // forward op writes gets a copy of its own.
  std::vector<int> in_eval(graph.tensors.size(), -1);
  for (size_t t = 0; t < in_eval.size(); ++t) {
    const Tensor& x = graph.tensors[t];
    const bool constant = x.role == Role::kState && x.init == Init::kData;
    if (x.role == Role::kInput || x.role == Role::kLabel || x.role == Role::kParam || constant) {
      in_eval[t] = static_cast<int>(t);
    }
  }
  const size_t first = graph.ops.size();
  for (size_t i = 0; i < forward.size(); ++i) {
    const Op& op = forward[i];
    if (op.code == OpCode::kDropout) {
      in_eval[op.outputs[0]] = in_eval[op.inputs[0]];
      continue;
    }
    if (op.code == OpCode::kBatchNorm) {
      append_batch_norm_inference(graph, op, static_cast<int>(i), in_eval);
      continue;
    }
    std::vector<int> inputs, outputs;
    for (int t : op.inputs) {
      if (in_eval[t] < 0) {
        throw CompileError("eval program: op " + std::to_string(i) + " (" +
                           op_name(static_cast<uint16_t>(op.code)) + ") reads '" +
                           graph.tensors[t].name + "', which no earlier forward op writes");
      }
      inputs.push_back(in_eval[t]);
    }
    for (int t : op.outputs) {
      const Tensor x = graph.tensors[t];  // a copy: add_tensor may move the vector
      const bool is_loss = t == graph.loss;
      const std::string hint = t == prediction ? (cross_entropy ? "logits" : "predictions")
                               : is_loss       ? "loss@eval"
                                               : x.name + "@eval";
      in_eval[t] = graph.add_tensor(graph.unique_name(hint), x.dtype, x.shape,
                                    is_loss ? Role::kLoss : Role::kActivation);
    }
    for (int t : op.outputs) outputs.push_back(in_eval[t]);
    std::vector<float> fattrs = op.fattrs;
    // Fused attention drops out its own probabilities: not in eval.
    if (op.code == OpCode::kAttention && fattrs.size() > attr::attention::p.index)
      fattrs[attr::attention::p.index] = 0.0f;
    graph.add_op(op.code, inputs, outputs, op.iattrs, std::move(fattrs), Phase::kEval,
                 static_cast<int>(i));
  }
  const Role read = graph.tensors[in_eval[prediction]].role;
  if (read == Role::kInput || read == Role::kLabel || read == Role::kParam) {
    throw CompileError(
        "eval program: the loss reads '" + graph.tensors[prediction].name +
        "' with no op before it, so there is nothing for the eval program to compute");
  }
  graph.eval_ops = graph.ops.size() - first;
  graph.eval_loss = in_eval[graph.loss];
  graph.outputs = {in_eval[prediction]};
}

}  // namespace compiler
}  // namespace remat
