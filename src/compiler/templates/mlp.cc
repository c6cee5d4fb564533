// The `mlp` template: Linear+ReLU blocks, a final Linear, softmax cross-entropy.
#include "compiler/builder.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {

Graph build_mlp(TemplateSpec& spec, int64_t batch) {
  const int64_t layers =
      spec.integer_up_to("layers", 1, kMaxMlpLayers, "deeper models take too long to plan");
  const int64_t width = spec.integer("width", 1);
  const int64_t in = spec.integer("in", 1);
  const int64_t classes = spec.integer("classes", 1);
  const float p = spec.real("dropout", 0.0f, 1.0f, 0.0f);
  Graph graph;
  Builder b(&graph);
  int h = b.input("x", REMAT_DTYPE_F32, {batch, in});
  const int labels = b.label("labels", REMAT_DTYPE_I32, {batch});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string prefix = "fc" + std::to_string(i);
    h = b.relu(b.linear(h, width, prefix), prefix + ".relu");
    h = b.dropout(h, p, prefix + ".dropout");
  }
  const int logits = b.linear(h, classes, "fc" + std::to_string(layers));
  b.softmax_cross_entropy(logits, labels);
  return graph;
}

}  // namespace compiler
}  // namespace remat
