// The `cnn` template: stages of 3x3 convolution, batch norm, ReLU and 2x2 max pooling, then a
// linear classifier on the flattened features.
#include "compiler/builder.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {

Graph build_cnn(TemplateSpec& spec, int64_t batch) {
  const std::vector<int64_t> channels = spec.dims("channels", 1, kMaxCnnStages, "C1xC2x...");
  const std::vector<int64_t> in = spec.dims("in", 3, 3, "CxHxW");
  const int64_t classes = spec.integer("classes", 1);
  Graph graph;
  Builder b(&graph);
  int h = b.input("x", REMAT_DTYPE_F32, {batch, in[0], in[1], in[2]});
  const int labels = b.label("labels", REMAT_DTYPE_I32, {batch});
  for (size_t i = 0; i < channels.size(); ++i) {
    const std::string prefix = "stages." + std::to_string(i);
    const Tensor& x = graph.tensors[h];
    if (x.shape[2] < 2 || x.shape[3] < 2) {
      throw CompileError(
          "model cnn: stage " + std::to_string(i) + " gets a " + std::to_string(x.shape[2]) + "x" +
          std::to_string(x.shape[3]) +
          " image, too small for its 2x2 pooling (use fewer stages or a larger in=)");
    }
    Builder::ConvSpec conv{channels[i]};
    conv.kernel_h = conv.kernel_w = 3;
    conv.pad_h = conv.pad_w = 1;
    conv.bias = false;  // the batch norm's shift takes its place
    h = b.conv(h, conv, prefix + ".conv");
    h = b.relu(b.batch_norm(h, prefix + ".bn"), prefix + ".relu");
    h = b.max_pool(h, 2, 2, 0, false, prefix + ".pool");
  }
  const int logits = b.linear(b.flatten(h, "flatten"), classes, "classifier");
  b.softmax_cross_entropy(logits, labels);
  return graph;
}

}  // namespace compiler
}  // namespace remat
