// Optimizer parsing and update-op emission.
#include "compiler/optimizer.h"

#include <sstream>

#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {

OptimizerSpec parse_optimizer(const std::string& text) {
  TemplateSpec spec(text);
  OptimizerSpec o;
  const float kBig = 1e6f;
  o.lr = spec.real("lr", 0.0f, kBig, o.lr);
  o.weight_decay = spec.real("weight_decay", 0.0f, kBig, o.weight_decay);
  std::ostringstream canonical;
  if (spec.name() == "sgd") {
    o.kind = OptimizerSpec::Kind::kSgd;
    o.momentum = spec.real("momentum", 0.0f, 1.0f, o.momentum);
    canonical << "sgd:lr=" << o.lr << ",momentum=" << o.momentum;
  } else if (spec.name() == "adam" || spec.name() == "adamw") {
    o.kind = spec.name() == "adam" ? OptimizerSpec::Kind::kAdam : OptimizerSpec::Kind::kAdamW;
    o.beta1 = spec.real("beta1", 0.0f, 1.0f, o.beta1);
    o.beta2 = spec.real("beta2", 0.0f, 1.0f, o.beta2);
    o.eps = spec.real("eps", 1e-30f, 1.0f, o.eps);
    canonical << spec.name() << ":lr=" << o.lr << ",beta1=" << o.beta1 << ",beta2=" << o.beta2
              << ",eps=" << o.eps;
  } else {
    throw CompileError("optimizer '" + text + "': unknown kind '" + spec.name() +
                       "' (sgd, adam, adamw)");
  }
  canonical << ",weight_decay=" << o.weight_decay;
  spec.reject_unused();
  o.text = canonical.str();
  return o;
}

void append_update(Graph& graph, const OptimizerSpec& spec, int param, int grad, int source) {
  const Tensor p = graph.tensors[param];
  auto state = [&](const std::string& what) {
    return graph.add_tensor("optimizer." + what + "." + p.name, REMAT_DTYPE_F32, p.shape,
                            Role::kState, Init::kZeros);
  };
  if (spec.kind == OptimizerSpec::Kind::kSgd) {
    namespace s = attr::sgd_update;
    const std::vector<float> f = named(
        {{s::lr, spec.lr}, {s::momentum, spec.momentum}, {s::weight_decay, spec.weight_decay}});
    if (spec.momentum != 0.0f) {
      const int velocity = state("velocity");
      graph.add_op(OpCode::kSgdUpdate, {param, grad, velocity}, {param, velocity}, {}, f,
                   Phase::kUpdate, source);
    } else {
      graph.add_op(OpCode::kSgdUpdate, {param, grad}, {param}, {}, f, Phase::kUpdate, source);
    }
    return;
  }
  const int m = state("m");
  const int v = state("v");
  namespace a = attr::adam_update;
  graph.add_op(OpCode::kAdamUpdate, {param, grad, m, v}, {param, m, v},
               named({{a::decoupled, spec.kind == OptimizerSpec::Kind::kAdamW ? 1 : 0}}),
               named({{a::lr, spec.lr},
                      {a::b1, spec.beta1},
                      {a::b2, spec.beta2},
                      {a::eps, spec.eps},
                      {a::weight_decay, spec.weight_decay}}),
               Phase::kUpdate, source);
}

}  // namespace compiler
}  // namespace remat
