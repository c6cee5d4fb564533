// The `dscnn` template: the depthwise-separable CNN for keyword spotting of Zhang et al. 2017
// ("Hello Edge"): a 10x4 stride-2 convolution, blocks of depthwise 3x3 and pointwise 1x1
// convolutions each followed by batch norm and ReLU, global average pooling, a linear layer.
#include "compiler/builder.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {
namespace {

int conv_bn_relu(Builder& b, int x, const Builder::ConvSpec& spec, const std::string& conv,
                 const std::string& bn, const std::string& relu) {
  return b.relu(b.batch_norm(b.conv(x, spec, conv), bn), relu);
}

}  // namespace

Graph build_dscnn(TemplateSpec& spec, int64_t batch) {
  const int64_t blocks =
      spec.integer_up_to("blocks", 1, kMaxDscnnBlocks, "deeper models take too long to plan");
  const int64_t width = spec.integer("width", 1, 64);
  const std::vector<int64_t> in = spec.dims("in", 3, 3, "CxHxW");
  const int64_t classes = spec.integer("classes", 1);
  Graph graph;
  Builder b(&graph);
  const int x = b.input("x", REMAT_DTYPE_F32, {batch, in[0], in[1], in[2]});
  const int labels = b.label("labels", REMAT_DTYPE_I32, {batch});
  // The first layer: 10x4 filters at stride 2, padded to TensorFlow's "same" output size.
  Builder::ConvSpec first{width};
  first.kernel_h = 10;
  first.kernel_w = 4;
  first.stride_h = first.stride_w = 2;
  first.pad_h = 5;
  first.pad_w = 1;
  first.bias = false;
  int h = conv_bn_relu(b, x, first, "conv1", "bn1", "relu1");
  for (int64_t i = 0; i < blocks; ++i) {
    const std::string prefix = "blocks." + std::to_string(i);
    Builder::ConvSpec depthwise{width};
    depthwise.kernel_h = depthwise.kernel_w = 3;
    depthwise.pad_h = depthwise.pad_w = 1;
    depthwise.groups = width;
    depthwise.bias = false;
    h = conv_bn_relu(b, h, depthwise, prefix + ".depthwise", prefix + ".bn1", prefix + ".relu1");
    Builder::ConvSpec pointwise{width};
    pointwise.bias = false;
    h = conv_bn_relu(b, h, pointwise, prefix + ".pointwise", prefix + ".bn2", prefix + ".relu2");
  }
  b.softmax_cross_entropy(b.linear(b.global_avg_pool(h, "avgpool"), classes, "fc"), labels);
  return graph;
}

}  // namespace compiler
}  // namespace remat
