// The `resnet` template: the CIFAR ResNet of He et al. 2016 (section 4.2), depth 6n + 2, with
// torchvision's BasicBlock and 1x1 strided convolution shortcuts where the shape changes.
#include "compiler/builder.h"
#include "compiler/templates/templates.h"

namespace remat {
namespace compiler {
namespace {

int conv3x3_bn(Builder& b, int x, int64_t planes, int64_t stride, const std::string& conv,
               const std::string& bn) {
  Builder::ConvSpec spec{planes};
  spec.kernel_h = spec.kernel_w = 3;
  spec.stride_h = spec.stride_w = stride;
  spec.pad_h = spec.pad_w = 1;
  spec.bias = false;
  return b.batch_norm(b.conv(x, spec, conv), bn);
}

// torchvision's BasicBlock: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)).
int basic_block(Builder& b, int x, int64_t planes, int64_t stride, const std::string& prefix) {
  const int64_t in_planes = b.graph().tensors[x].shape[1];
  int h = b.relu(conv3x3_bn(b, x, planes, stride, prefix + ".conv1", prefix + ".bn1"),
                 prefix + ".relu1");
  h = conv3x3_bn(b, h, planes, 1, prefix + ".conv2", prefix + ".bn2");
  int shortcut = x;
  if (stride != 1 || in_planes != planes) {
    Builder::ConvSpec spec{planes};
    spec.stride_h = spec.stride_w = stride;
    spec.bias = false;
    shortcut = b.batch_norm(b.conv(x, spec, prefix + ".downsample.0"), prefix + ".downsample.1");
  }
  return b.relu(b.add(h, shortcut, prefix + ".residual"), prefix + ".relu2");
}

}  // namespace

Graph build_resnet(TemplateSpec& spec, int64_t batch) {
  const int64_t depth = spec.integer("depth", 8);
  if ((depth - 2) % 6 != 0) {
    throw CompileError("model resnet: depth=" + std::to_string(depth) +
                       " is not 6n+2 (20, 32, 44, 56, 110, ...)");
  }
  const int64_t blocks = (depth - 2) / 6;
  if (blocks > kMaxResnetBlocks) {
    throw CompileError("model resnet: depth=" + std::to_string(depth) + " is over the limit of " +
                       std::to_string(6 * kMaxResnetBlocks + 2) +
                       " (deeper models take too long to plan; docs/templates.md, \"Limits\")");
  }
  const int64_t width = spec.integer("width", 1, 16);
  const std::vector<int64_t> in = spec.dims("in", 3, 3, "CxHxW");
  const int64_t classes = spec.integer("classes", 1);
  if (in[1] < 4 || in[2] < 4) {
    throw CompileError("model resnet: in=" + std::to_string(in[0]) + "x" + std::to_string(in[1]) +
                       "x" + std::to_string(in[2]) +
                       " is too small: two stride-2 stages need an image of at least 4x4");
  }
  Graph graph;
  Builder b(&graph);
  const int x = b.input("x", REMAT_DTYPE_F32, {batch, in[0], in[1], in[2]});
  const int labels = b.label("labels", REMAT_DTYPE_I32, {batch});
  int h = b.relu(conv3x3_bn(b, x, width, 1, "conv1", "bn1"), "relu");
  for (int64_t stage = 0; stage < 3; ++stage) {
    for (int64_t i = 0; i < blocks; ++i) {
      const int64_t stride = stage > 0 && i == 0 ? 2 : 1;
      h = basic_block(b, h, width << stage, stride,
                      "layer" + std::to_string(stage + 1) + "." + std::to_string(i));
    }
  }
  b.softmax_cross_entropy(b.linear(b.global_avg_pool(h, "avgpool"), classes, "fc"), labels);
  return graph;
}

}  // namespace compiler
}  // namespace remat
