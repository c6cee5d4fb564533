// Parsing `--loss-scale` and the loss scale's state tensors.
#include "compiler/loss_scaling.h"

#include <cmath>
#include <cstring>

#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {

LossScaleSpec parse_loss_scale(const std::string& text, Precision precision) {
  LossScaleSpec s;
  if (text.empty()) {
    s.dynamic = precision == Precision::kFp16;
    return s;
  }
  if (text == "off") return s;
  TemplateSpec spec(text);
  if (spec.name() != "dynamic")
    throw CompileError("loss scale '" + text + "': expected off or dynamic[:init=S][,interval=N]");
  s.dynamic = true;
  s.init = spec.real("init", 1.0f, 1e30f, s.init);
  const int64_t interval = spec.integer("interval", 1, s.interval);
  if (interval > UINT32_MAX) {
    throw CompileError("loss scale '" + text + "': interval=" + std::to_string(interval) +
                       " is over " + std::to_string(UINT32_MAX));
  }
  s.interval = static_cast<uint32_t>(interval);
  int exponent = 0;
  if (std::frexp(s.init, &exponent) != 0.5f) {
    throw CompileError("loss scale '" + text + "': init=" + std::to_string(s.init) +
                       " is not a power of two (scaling by one is exact)");
  }
  spec.reject_unused();
  return s;
}

void add_loss_scaling_state(Graph& graph, const LossScaleSpec& spec) {
  if (!spec.dynamic) return;
  LossScalingTensors& l = graph.loss_scaling;
  l.scale = graph.add_tensor("loss_scale", REMAT_DTYPE_F32, {1}, Role::kState, Init::kData);
  Tensor& scale = graph.tensors[static_cast<size_t>(l.scale)];
  scale.init_data.resize(sizeof(float));
  std::memcpy(scale.init_data.data(), &spec.init, sizeof(float));
  l.clean_steps =
      graph.add_tensor("loss_scale.clean_steps", REMAT_DTYPE_I64, {1}, Role::kState, Init::kZeros);
  l.growth_interval = spec.interval;
}

}  // namespace compiler
}  // namespace remat
