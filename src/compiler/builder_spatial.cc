// The builder's convolutional layers: convolutions, batch norm, pooling, flatten, pad, concat.
#include <cmath>

#include "compiler/builder.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace compiler {
namespace {

// Every spatial layer takes [N, C, L] or [N, C, H, W].
void require_spatial(const Tensor& x, const std::string& layer) {
  if (x.shape.size() != 3 && x.shape.size() != 4) {
    throw CompileError(layer + ": input '" + x.name + "' has rank " +
                       std::to_string(x.shape.size()) + ", expected 3 [N, C, L] or 4 [N, C, H, W]");
  }
}

// |shape| with its spatial dims replaced by (h, w) (rank 3: w only).
std::vector<int64_t> with_spatial(std::vector<int64_t> shape, int64_t channels, int64_t h,
                                  int64_t w) {
  shape[1] = channels;
  if (shape.size() == 4) shape[2] = h;
  shape.back() = w;
  return shape;
}

}  // namespace

int Builder::conv(int x, const ConvSpec& spec, const std::string& prefix) {
  const Tensor in = t(x);
  require_spatial(in, prefix);
  const bool two_d = in.shape.size() == 4;
  const int64_t c = in.shape[1];
  if (spec.groups < 1 || c % spec.groups != 0 || spec.out_channels % spec.groups != 0) {
    throw CompileError(prefix + ": groups " + std::to_string(spec.groups) +
                       " must divide the input channels " + std::to_string(c) +
                       " and the output channels " + std::to_string(spec.out_channels));
  }
  std::vector<int64_t> w_shape{spec.out_channels, c / spec.groups};
  if (two_d) w_shape.push_back(spec.kernel_h);
  w_shape.push_back(spec.kernel_w);
  const int64_t fan_in = c / spec.groups * (two_d ? spec.kernel_h : 1) * spec.kernel_w;
  const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
  const int w = param(prefix + ".weight", w_shape, Init::kUniform, bound);
  const int bias =
      spec.bias ? param(prefix + ".bias", {spec.out_channels}, Init::kUniform, bound) : -1;
  return conv_with(x, w, bias, spec, prefix);
}

int Builder::conv_with(int x, int w, int bias, const ConvSpec& spec, const std::string& prefix) {
  const Tensor in = t(x);
  require_spatial(in, prefix);
  const bool two_d = in.shape.size() == 4;
  const std::vector<int64_t> w_shape = t(w).shape;
  if (w_shape.size() != in.shape.size()) {
    throw CompileError(prefix + ": filters '" + t(w).name + "' have rank " +
                       std::to_string(w_shape.size()) + ", input '" + in.name + "' rank " +
                       std::to_string(in.shape.size()));
  }
  std::vector<int> inputs{x, w};
  if (bias >= 0) inputs.push_back(bias);
  namespace a = attr::conv;
  const std::vector<int64_t> attrs = named({{a::stride_h, two_d ? spec.stride_h : 1},
                                            {a::stride_w, spec.stride_w},
                                            {a::pad_h, two_d ? spec.pad_h : 0},
                                            {a::pad_w, spec.pad_w},
                                            {a::dilation_h, two_d ? spec.dilation_h : 1},
                                            {a::dilation_w, spec.dilation_w},
                                            {a::groups, spec.groups}});
  const ConvShape shape = conv_shape(in.shape.data(), w_shape.data(),
                                     static_cast<int>(in.shape.size()), conv_attrs(attrs.data()));
  if (shape.p < 1 || shape.q < 1) {
    throw CompileError(prefix + ": the filter does not fit input '" + in.name +
                       "' with this padding and dilation");
  }
  const int y = activation(prefix + ".out", with_spatial(in.shape, w_shape[0], shape.p, shape.q));
  g_->add_op(OpCode::kConv, inputs, {y}, attrs);
  return y;
}

int Builder::batch_norm(int x, const std::string& prefix, float eps, float momentum) {
  const Tensor in = t(x);
  if (in.shape.size() < 2 || in.shape.size() > 4) {
    throw CompileError(prefix + ": input '" + in.name + "' has rank " +
                       std::to_string(in.shape.size()) + ", expected 2 to 4");
  }
  const int64_t c = in.shape[1];
  const int gamma = param(prefix + ".weight", {c}, Init::kOnes, 0.0f);
  const int beta = param(prefix + ".bias", {c}, Init::kZeros, 0.0f);
  const int mean =
      g_->add_tensor(prefix + ".running_mean", REMAT_DTYPE_F32, {c}, Role::kState, Init::kZeros);
  const int var =
      g_->add_tensor(prefix + ".running_var", REMAT_DTYPE_F32, {c}, Role::kState, Init::kOnes);
  return batch_norm_with(x, gamma, beta, mean, var, prefix, eps, momentum);
}

int Builder::batch_norm_with(int x, int gamma, int beta, int running_mean, int running_var,
                             const std::string& prefix, float eps, float momentum) {
  const Tensor in = t(x);
  if (in.shape.size() < 2 || in.shape.size() > 4) {
    throw CompileError(prefix + ": input '" + in.name + "' has rank " +
                       std::to_string(in.shape.size()) + ", expected 2 to 4");
  }
  const int64_t c = in.shape[1];
  for (int p : {gamma, beta, running_mean, running_var}) {
    if (t(p).shape != std::vector<int64_t>{c}) {
      throw CompileError(prefix + ": '" + t(p).name + "' must have shape [" + std::to_string(c) +
                         "], the channels of '" + in.name + "'");
    }
  }
  BatchNormBuffers buffers;
  buffers.running_mean = running_mean;
  buffers.running_var = running_var;
  buffers.num_batches_tracked = g_->add_tensor(prefix + ".num_batches_tracked", REMAT_DTYPE_I64,
                                               {1}, Role::kState, Init::kZeros);
  buffers.momentum = momentum;
  g_->buffers.insert(g_->buffers.end(),
                     {buffers.running_mean, buffers.running_var, buffers.num_batches_tracked});
  const int y = activation(prefix + ".out", in.shape);
  const int mean = activation(prefix + ".mean", {c});
  const int var = activation(prefix + ".var", {c});
  buffers.op = g_->add_op(OpCode::kBatchNorm, {x, gamma, beta}, {y, mean, var}, {},
                          named({{attr::batch_norm::eps, eps}}));
  g_->batch_norms.push_back(buffers);
  return y;
}

int Builder::max_pool(int x, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode,
                      const std::string& name) {
  return max_pool(x, PoolWindow2d::square(kernel, stride, pad), ceil_mode, name);
}

int Builder::max_pool(int x, const PoolWindow2d& window, bool ceil_mode, const std::string& name) {
  return avg_or_max_pool(OpCode::kMaxPool, x, window, ceil_mode, true, name);
}

int Builder::avg_pool(int x, const PoolWindow2d& window, bool ceil_mode, bool count_include_pad,
                      const std::string& name) {
  return avg_or_max_pool(OpCode::kAvgPool, x, window, ceil_mode, count_include_pad, name);
}

int Builder::avg_or_max_pool(OpCode code, int x, const PoolWindow2d& w, bool ceil_mode,
                             bool count_include_pad, const std::string& name) {
  const Tensor in = t(x);
  require_spatial(in, name);
  const bool two_d = in.shape.size() == 4;
  const bool average = code == OpCode::kAvgPool;
  if (average && (w.dilation_h != 1 || w.dilation_w != 1))
    throw CompileError(name + ": average pooling takes no dilation");
  namespace a = attr::avg_pool;
  namespace m = attr::max_pool;
  const int64_t dilation_h = two_d ? w.dilation_h : 1;
  // The first seven are alike (plan/spatial_shape.h); then count_include_pad or the dilations.
  static_assert(
      a::count_include_pad.index == 7 && m::dilation_h.index == 7 && m::dilation_w.index == 8,
      "avg_pool's eighth attribute, max_pool's eighth and ninth");
  std::vector<int64_t> attrs = named({{a::kernel_h, two_d ? w.kernel_h : 1},
                                      {a::kernel_w, w.kernel_w},
                                      {a::stride_h, two_d ? w.stride_h : 1},
                                      {a::stride_w, w.stride_w},
                                      {a::pad_h, two_d ? w.pad_h : 0},
                                      {a::pad_w, w.pad_w},
                                      {a::ceil_mode, ceil_mode ? 1 : 0}});
  if (average) {
    attrs.push_back(count_include_pad ? 1 : 0);
  } else {
    attrs.push_back(dilation_h);
    attrs.push_back(w.dilation_w);
  }
  const int64_t h = two_d ? in.shape[2] : 1;
  const int64_t p = pool_out_size(h, attrs[a::kernel_h.index], attrs[a::stride_h.index],
                                  attrs[a::pad_h.index], dilation_h, ceil_mode);
  const int64_t q =
      pool_out_size(in.shape.back(), w.kernel_w, w.stride_w, w.pad_w, w.dilation_w, ceil_mode);
  if (p < 1 || q < 1)
    throw CompileError(name + ": the pooling window does not fit input '" + in.name + "'");
  const int y = activation(name, with_spatial(in.shape, in.shape[1], p, q));
  g_->add_op(code, {x}, {y}, attrs);
  return y;
}

int Builder::global_avg_pool(int x, const std::string& name) {
  const Tensor in = t(x);
  require_spatial(in, name);
  const int y = activation(name, {in.shape[0], in.shape[1]});
  g_->add_op(OpCode::kGlobalAvgPool, {x}, {y});
  return y;
}

int Builder::flatten(int x, const std::string& name) {
  const Tensor in = t(x);
  const int y = activation(name, {in.shape[0], in.numel() / in.shape[0]});
  g_->add_op(OpCode::kCopy, {x}, {y});
  return y;
}

int Builder::pad(int x, int64_t top, int64_t bottom, int64_t left, int64_t right, float value,
                 const std::string& name) {
  const Tensor in = t(x);
  require_spatial(in, name);
  const bool two_d = in.shape.size() == 4;
  const int64_t h = two_d ? in.shape[2] + top + bottom : 1;
  const int y =
      activation(name, with_spatial(in.shape, in.shape[1], h, in.shape.back() + left + right));
  namespace a = attr::pad;
  g_->add_op(OpCode::kPad, {x}, {y},
             named({{a::top, top}, {a::bottom, bottom}, {a::left, left}, {a::right, right}}),
             named({{a::value, value}}));
  return y;
}

int Builder::concat(const std::vector<int>& parts, int64_t axis, const std::string& name) {
  if (parts.size() < 2 || parts.size() > 5) {
    throw CompileError(name + ": concat takes 2 to 5 tensors, not " + std::to_string(parts.size()));
  }
  std::vector<int64_t> shape = t(parts[0]).shape;
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) {
    throw CompileError(name + ": axis " + std::to_string(axis) + " outside the rank of '" +
                       t(parts[0]).name + "'");
  }
  shape[axis] = 0;
  for (int part : parts) shape[axis] += t(part).shape.at(axis);
  const int y = activation(name, shape);
  g_->add_op(OpCode::kConcat, parts, {y}, named({{attr::concat::axis, axis}}));
  return y;
}

}  // namespace compiler
}  // namespace remat
