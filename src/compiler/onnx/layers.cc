// The ONNX importer's layers (onnx/importer.h): one function per ONNX operator (or family),
// each emitting remat ops through the Builder.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "compiler/onnx/importer.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace compiler {

void OnnxImporter::gemm(const onnx::NodeProto& n) {
  const Dims a = shape_of(n.input(0));
  if (a.size() != 2 || int_attr(n, "transA", 0) != 0)
    unsupported(n, "Gemm takes a 2-D A, not transposed");
  const bool trans_b = int_attr(n, "transB", 0) != 0;
  Swapped rows;
  const int x = rows_of(n, 0, &rows);
  const int w = adopt(n, 1, Role::kParam);
  const Dims wd = out_.graph.tensors[w].shape;
  if (wd.size() != 2 || wd[trans_b ? 1 : 0] != a[1]) unsupported(n, "B does not match A's columns");
  // C, the bias, is matmul's epilogue.
  int bias = -1;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    if (float_attr(n, "beta", 1.0f) != 1.0f) unsupported(n, "beta other than 1");
    bias = adopt(n, 2, Role::kParam);
    if (out_.graph.tensors[bias].shape != Dims{wd[trans_b ? 0 : 1]})
      unsupported(n, "C must be a bias [N]");
  }
  const std::string name = out_.graph.unique_name(n.output(0));
  const int64_t columns = wd[trans_b ? 0 : 1];
  Dims out = out_.graph.tensors[x].shape;  // [M, K], or held [B, S, K] (row order kept)
  out.back() = columns;
  define_rows(n, 0, b_.matmul(x, w, false, trans_b, float_attr(n, "alpha", 1.0f), out, name, bias),
              rows, {a[0], columns});
}

void OnnxImporter::matmul(const onnx::NodeProto& n) {
  const Dims a = shape_of(n.input(0));
  if (a.size() < 2) unsupported(n, "MatMul of vectors");
  const auto t = transposed_.find(n.input(1));
  Swapped rows;
  if (t != transposed_.end()) {  // x @ W^T: nn.Linear on more than 2 dims
    const int x = rows_of(n, 0, &rows);
    const int w = adopt_named(n, t->second, Role::kParam);
    const Dims wd = out_.graph.tensors[w].shape;
    if (wd[1] != a.back()) unsupported(n, "the transposed weight does not match A's last dim");
    Dims out = a;
    out.back() = wd[0];
    if (linear_with_bias(n, x, w, true, out, rows)) return;
    Dims held = out_.graph.tensors[x].shape;
    held.back() = wd[0];
    return define_rows(
        n, 0, b_.matmul(x, w, false, true, 1.0f, held, out_.graph.unique_name(n.output(0))), rows,
        out);
  }
  if (!is_constant(n.input(1))) {  // two computed tensors, batched alike (attention)
    const Dims bd = shape_of(n.input(1));
    if (bd.size() != a.size() || !std::equal(a.begin(), a.end() - 2, bd.begin()) ||
        bd[bd.size() - 2] != a.back()) {
      unsupported(
          n, "MatMul of computed tensors needs equal batch dims and A's columns equal to B's rows");
    }
    Dims out = a;
    out.back() = bd.back();
    const int x = tensor(n, 0), y = tensor(n, 1);
    return define(n, 0,
                  b_.matmul(x, y, false, false, 1.0f, out, out_.graph.unique_name(n.output(0))));
  }
  const int x = rows_of(n, 0, &rows);
  const int w = adopt(n, 1, Role::kParam);
  const Dims wd = out_.graph.tensors[w].shape;
  if (wd.size() != 2 || wd[0] != a.back())
    unsupported(n, "B must be a 2-D parameter [K, N] matching A's last dim");
  Dims out = a;
  out.back() = wd[1];
  if (linear_with_bias(n, x, w, false, out, rows)) return;
  Dims held = out_.graph.tensors[x].shape;
  held.back() = wd[1];
  define_rows(n, 0, b_.matmul(x, w, false, false, 1.0f, held, out_.graph.unique_name(n.output(0))),
              rows, out);
}

bool OnnxImporter::linear_with_bias(const onnx::NodeProto& n, int x, int w, bool trans_b,
                                    const Dims& out, const Swapped& rows) {
  const onnx::NodeProto* add = sole_reader(n.output(0));
  if (add == nullptr || add->op_type() != "Add" || add->input_size() != 2) return false;
  const int side = add->input(0) == n.output(0) ? 1 : 0;  // the bias's input of the Add
  if (add->input(1 - side) != n.output(0)) return false;
  const auto found = constants_.find(add->input(side));
  if (found == constants_.end()) return false;
  const Constant& c = found->second;
  if (c.type != onnx::TensorProto_DataType_FLOAT || c.initializer.empty() ||
      c.dims != Dims{out.back()})
    return false;
  const int bias = adopt_named(*add, add->input(side), Role::kParam);
  done_.insert(add);
  Dims held = out_.graph.tensors[x].shape;
  held.back() = out.back();
  define_rows(
      *add, 0,
      b_.matmul(x, w, false, trans_b, 1.0f, held, out_.graph.unique_name(add->output(0)), bias),
      rows, out);
  return true;
}

void OnnxImporter::conv(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const bool two_d = d.size() == 4;
  if (d.size() != 3 && d.size() != 4) unsupported(n, "Conv takes [N, C, L] or [N, C, H, W]");
  const std::string auto_pad = attribute(n, "auto_pad") ? attribute(n, "auto_pad")->s() : "NOTSET";
  if (auto_pad != "NOTSET") unsupported(n, "auto_pad " + auto_pad + " (export with explicit pads)");
  const size_t spatial = d.size() - 2;
  const Dims strides = ints_attr(n, "strides", Dims(spatial, 1)),
             dilations = ints_attr(n, "dilations", Dims(spatial, 1));
  const Dims pads = ints_attr(n, "pads", Dims(2 * spatial, 0));
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) {
    unsupported(n, "strides, dilations and pads must have one entry per spatial axis (pads two)");
  }
  for (size_t k = 0; k < spatial; ++k) {
    if (pads[k] != pads[k + spatial]) unsupported(n, "pads differ at the two ends of an axis");
    if (strides[k] < 1 || dilations[k] < 1 || pads[k] < 0)
      unsupported(n, "strides and dilations below 1, or negative pads");
  }
  bounded(n, strides, 1, "stride", kMaxSpatialAttrLog2);
  bounded(n, dilations, 1, "dilation", kMaxSpatialAttrLog2);
  bounded(n, pads, 0, "pad", kMaxSpatialAttrLog2);
  bounded(n, {int_attr(n, "group", 1)}, 1, "group");
  const int x = tensor(n, 0);
  const int w = adopt(n, 1, Role::kParam);
  const int bias = n.input_size() > 2 && !n.input(2).empty() ? adopt(n, 2, Role::kParam) : -1;
  Builder::ConvSpec spec;
  spec.groups = int_attr(n, "group", 1);
  spec.stride_h = two_d ? strides[0] : 1;
  spec.stride_w = strides.back();
  spec.pad_h = two_d ? pads[0] : 0;
  spec.pad_w = pads[spatial - 1];
  spec.dilation_h = two_d ? dilations[0] : 1;
  spec.dilation_w = dilations.back();
  define(n, 0, b_.conv_with(x, w, bias, spec, out_.graph.unique_name(n.output(0))));
}

void OnnxImporter::batch_norm(const onnx::NodeProto& n) {
  for (int k = 1; k < n.output_size(); ++k) {
    // Training-mode exports name the updated running statistics; remat updates them itself.
    if (!n.output(k).empty() && readers_.count(n.output(k)) != 0) {
      unsupported(n, "output '" + n.output(k) + "' (a running statistic) is read by a node");
    }
  }
  if (attribute(n, "training_mode") != nullptr && int_attr(n, "training_mode", 0) == 0) {
    out_.warnings.push_back(
        "BatchNormalization node " + name_of(n) +
        " was exported in eval mode (training_mode 0); remat trains it on batch statistics "
        "and updates its running statistics, as PyTorch's train() does");
  }
  const int x = tensor(n, 0);
  const int gamma = adopt(n, 1, Role::kParam), beta = adopt(n, 2, Role::kParam);
  const int mean = adopt(n, 3, Role::kState), var = adopt(n, 4, Role::kState);
  // torch names them PREFIX.weight, .bias, .running_mean, .running_var; num_batches_tracked is
  // not exported, and starts at 0.
  std::string prefix = n.input(1);
  if (prefix.size() > 7 && prefix.compare(prefix.size() - 7, 7, ".weight") == 0)
    prefix.resize(prefix.size() - 7);
  // ONNX's momentum weighs the running statistic, torch's (1 - it) the batch's; read to 6
  // significant digits, so that torch's 0.1, exported as 0.9f, is 0.1f again (not 0.100000024).
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g",
                1.0 - static_cast<double>(float_attr(n, "momentum", 0.9f)));
  const float momentum = std::strtof(text, nullptr);
  define(n, 0,
         b_.batch_norm_with(x, gamma, beta, mean, var, prefix, float_attr(n, "epsilon", 1e-5f),
                            momentum));
}

void OnnxImporter::pool(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  if (d.size() != 3 && d.size() != 4) unsupported(n, "pooling takes [N, C, L] or [N, C, H, W]");
  const std::string name = out_.graph.unique_name(n.output(0));
  if (n.op_type() == "GlobalAveragePool") {
    // remat's [N, C], which ONNX calls [N, C, 1, 1] (or [N, C, 1]).
    Dims logical = {d[0], d[1]};
    logical.resize(d.size(), 1);
    return define(n, 0, b_.global_avg_pool(tensor(n, 0), name), logical);
  }
  const size_t spatial = d.size() - 2;
  const Dims kernel = ints_attr(n, "kernel_shape", {});
  const Dims strides = ints_attr(n, "strides", Dims(spatial, 1)),
             pads = ints_attr(n, "pads", Dims(2 * spatial, 0));
  const std::string auto_pad = attribute(n, "auto_pad") ? attribute(n, "auto_pad")->s() : "NOTSET";
  if (auto_pad != "NOTSET") unsupported(n, "auto_pad " + auto_pad + " (export with explicit pads)");
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial) {
    unsupported(n,
                "kernel_shape, strides and pads must have one entry per spatial axis (pads two)");
  }
  bounded(n, kernel, 1, "kernel", kMaxSpatialAttrLog2);
  bounded(n, strides, 1, "stride", kMaxSpatialAttrLog2);
  bounded(n, pads, 0, "pad", kMaxSpatialAttrLog2);
  // ONNX pads list the starts, then the ends; torch pads both ends of an axis alike, at most
  // half the window (its rule, and remat's: plan/op_catalogue.h).
  for (size_t k = 0; k < spatial; ++k) {
    if (pads[k] != pads[k + spatial])
      unsupported(n, "pads " + dims_text(pads) + ": remat pads both ends of an axis alike");
    if (pads[k] > kernel[k] / 2) {
      unsupported(n, "pad " + std::to_string(pads[k]) + " is more than half the window " +
                         std::to_string(kernel[k]) + " (torch's limit)");
    }
  }
  const Dims dilations = ints_attr(n, "dilations", Dims(spatial, 1));
  if (dilations.size() != spatial) unsupported(n, "dilations must have one entry per spatial axis");
  bounded(n, dilations, 1, "dilation", kMaxSpatialAttrLog2);
  if (n.output_size() > 1 && !n.output(1).empty()) unsupported(n, "MaxPool's indices output");
  const bool ceil = int_attr(n, "ceil_mode", 0) != 0;
  // [N, C, L] pools along L: the window's W values (Builder::PoolWindow2d).
  const size_t w = spatial - 1;
  const Builder::PoolWindow2d window{kernel[0], kernel[w], strides[0],   strides[w],
                                     pads[0],   pads[w],   dilations[0], dilations[w]};
  const int x = tensor(n, 0);
  const int y = n.op_type() == "MaxPool"
                    ? b_.max_pool(x, window, ceil, name)
                    : b_.avg_pool(x, window, ceil, int_attr(n, "count_include_pad", 0) != 0, name);
  define(n, 0, y);
}

void OnnxImporter::view_as(const onnx::NodeProto& n, const Dims& target) {
  if (is_boolean(n.input(0))) return boolean_view(n, target, false, false);
  Swapped rows;
  if (swapped(n.input(0), &rows)) {
    // Merging or splitting S and B keeps it held (onnx/sequence_first.cc).
    const Dims& held = out_.graph.tensors[rows.held].shape;
    const Dims rest(held.begin() + 2, held.end());
    const Dims split = [&] {
      Dims d = {rows.s, held[0]};
      d.insert(d.end(), rest.begin(), rest.end());
      return d;
    }();
    Dims merged = {rows.s * held[0]};
    merged.insert(merged.end(), rest.begin(), rest.end());
    if (target == split || target == merged) return define_swapped(n, 0, rows.held, rows.s, target);
  }
  if (tensors_.count(n.input(0)) == 0) tensor(n, 0);  // names what is wrong, or unswaps
  const auto it = tensors_.find(n.input(0));
  const int x = it->second;
  if (out_.graph.tensors[x].shape == target) return define(n, 0, x);
  // A copy with the new shape: remat's tensors are contiguous.
  const int y = fresh(n.output(0), target);
  out_.graph.add_op(OpCode::kCopy, {x}, {y});
  define(n, 0, y);
}

// Of a computed tensor: the same bytes in another shape (0 and -1 as ONNX defines them).
void OnnxImporter::reshape(const onnx::NodeProto& n) {
  const Constant& target = int_constant(n, 1);
  const Dims d = shape_of(n.input(0));
  Dims out(target.i.begin(), target.i.end());
  bounded(n, out, -1, "target dim");
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < out.size(); ++k) {
    if (out[k] == 0 && int_attr(n, "allowzero", 0) == 0) {
      if (k >= d.size()) unsupported(n, "a 0 in the target shape past the input's rank");
      out[k] = d[k];
    }
    if (out[k] == -1) {
      if (infer >= 0) unsupported(n, "two -1 in the target shape");
      infer = static_cast<int64_t>(k);
    } else if (__builtin_mul_overflow(known, out[k], &known) || known > product(d)) {
      unsupported(n, "target shape " + dims_text(out) + " holds more elements than the input");
    }
  }
  if (infer >= 0) out[static_cast<size_t>(infer)] = known > 0 ? product(d) / known : 0;
  if (product(out) != product(d))
    unsupported(n, "target shape " + dims_text(out) + " holds another element count");
  view_as(n, out);
}

// Squeeze and Unsqueeze of a computed tensor: the same bytes in another shape (axes from the
// input, opset 13+).
void OnnxImporter::squeeze(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  Dims d = shape_of(n.input(0));
  Dims axes;
  if (n.input_size() > 1 && !n.input(1).empty())
    axes.assign(int_constant(n, 1).i.begin(), int_constant(n, 1).i.end());
  const int64_t rank =
      static_cast<int64_t>(d.size()) + (op == "Unsqueeze" ? static_cast<int64_t>(axes.size()) : 0);
  for (int64_t& a : axes) {
    a = a < 0 ? a + rank : a;
    if (a < 0 || a >= rank) unsupported(n, "an axis outside the rank");
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    unsupported(n, "an axis listed twice");
  if (op == "Unsqueeze") {
    for (int64_t a : axes) d.insert(d.begin() + a, 1);
  } else {
    Dims kept;
    for (size_t k = 0; k < d.size(); ++k) {
      const bool listed =
          std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) != axes.end();
      if ((axes.empty() && d[k] == 1) || (listed && d[k] == 1)) continue;
      if (listed) unsupported(n, "squeezing an axis of size " + std::to_string(d[k]));
      kept.push_back(d[k]);
    }
    d = kept;
  }
  view_as(n, d);
}

void OnnxImporter::concat(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  if (axis < 0 || axis >= static_cast<int64_t>(d.size()))
    unsupported(n, "axis outside the inputs' rank");
  for (int k = 1; k < n.input_size(); ++k) {
    if (shape_of(n.input(k)).size() != d.size()) unsupported(n, "inputs of different ranks");
  }
  std::vector<int> parts;
  for (int k = 0; k < n.input_size(); ++k) parts.push_back(tensor(n, k));
  define(n, 0, b_.concat(parts, axis, out_.graph.unique_name(n.output(0))));
}

void OnnxImporter::pad(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const std::string mode = attribute(n, "mode") ? attribute(n, "mode")->s() : "constant";
  if (mode != "constant") unsupported(n, "mode " + mode + " (remat pads with a constant)");
  const Constant& pads = int_constant(n, 1);
  bounded(n, pads.i, 0, "pad");
  float value = 0.0f;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const Constant& v = constant(n, 2);
    if (v.f.size() != 1) unsupported(n, "the pad value must be one float");
    value = v.f[0];
  }
  const size_t rank = d.size();
  if (pads.i.size() != 2 * rank || (rank != 3 && rank != 4))
    unsupported(n, "pads for every axis of [N, C, L] or [N, C, H, W]");
  for (size_t k = 0; k < 2; ++k) {
    if (pads.i[k] != 0 || pads.i[k + rank] != 0)
      unsupported(n, "padding of the batch or channel axis");
  }
  const int64_t top = rank == 4 ? pads.i[2] : 0, bottom = rank == 4 ? pads.i[2 + rank] : 0;
  for (int64_t p : pads.i) {
    if (p < 0) unsupported(n, "negative pads (cropping)");
  }
  define(n, 0,
         b_.pad(tensor(n, 0), top, bottom, pads.i[rank - 1], pads.i[2 * rank - 1], value,
                out_.graph.unique_name(n.output(0))));
}

void OnnxImporter::transpose(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  Dims perm = ints_attr(n, "perm", {});
  if (perm.empty()) {
    for (size_t k = d.size(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  }
  if (is_constant(n.input(0))) {
    // A weight transposed for x @ W^T: MatMul reads the initializer with trans_b.
    if (d.size() != 2 || perm != Dims{1, 0} || constants_.at(n.input(0)).initializer.empty()) {
      unsupported(n, "a transposed constant must be a 2-D initializer");
    }
    transposed_[n.output(0)] = n.input(0);
    return;
  }
  if (perm.size() != d.size()) unsupported(n, "perm does not match the input's rank");
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(d.size()))
      unsupported(n, "perm entry " + std::to_string(p));
    out.push_back(d[static_cast<size_t>(p)]);
  }
  if (perm == Dims{1, 0, 2}) {  // onnx/sequence_first.cc
    Swapped rows;
    if (swapped(n.input(0), &rows) && shape_of(n.input(0)).size() == 3 &&
        out_.graph.tensors[rows.held].shape == out) {
      return define(n, 0, rows.held);
    }
    return define_swapped(n, 0, tensor(n, 0), d[1], out);
  }
  const int x = tensor(n, 0);
  define(n, 0, b_.permute(x, d, perm, out, out_.graph.unique_name(n.output(0))));
}

void OnnxImporter::gather(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  if (is_constant(n.input(0))) {
    // An embedding: rows of a parameter table picked by ids.
    if (axis != 0 || d.size() != 2)
      unsupported(n, "Gather from a parameter takes rows of a 2-D table (axis 0)");
    const int table = adopt(n, 0, Role::kParam);
    int ids;
    if (is_constant(n.input(1))) {
      // Constant ids (positions): an i32 tensor the plan carries.
      const Constant& c = int_constant(n, 1);
      if (c.dims.empty()) unsupported(n, "constant ids must have at least one dim");
      for (int64_t v : c.i) {
        if (v < 0 || v >= d[0])
          unsupported(n, "constant id " + std::to_string(v) + " outside the table's rows");
      }
      const std::vector<int32_t> narrow(c.i.begin(), c.i.end());
      ids = carried(out_.graph.unique_name(n.input(1)), REMAT_DTYPE_I32, c.dims, Role::kState,
                    narrow.data(), narrow.size() * sizeof(int32_t));
    } else {
      ids = tensor(n, 1);
      if (out_.graph.tensors[ids].dtype != REMAT_DTYPE_I32)
        unsupported(n, "ids must be an integer input");
    }
    return define(n, 0, b_.embedding(ids, table, out_.graph.unique_name(n.output(0))));
  }
  // One index of an axis of a computed tensor ([:, 0] of a sequence).
  if (axis < 0 || axis >= static_cast<int64_t>(d.size()))
    unsupported(n, "axis outside the input's rank");
  if (!is_constant(n.input(1)) || int_constant(n, 1).numel() != 1 ||
      !int_constant(n, 1).dims.empty()) {
    unsupported(n, "Gather from a computed tensor takes one constant index (a scalar)");
  }
  int64_t at = int_constant(n, 1).i[0];
  if (at < 0) at += d[static_cast<size_t>(axis)];
  if (at < 0 || at >= d[static_cast<size_t>(axis)]) unsupported(n, "index outside the axis");
  const int x = tensor(n, 0);
  define(n, 0, b_.select(x, static_cast<int>(axis), at, out_.graph.unique_name(n.output(0))));
}

void OnnxImporter::layer_norm(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const int64_t axis = int_attr(n, "axis", -1);
  if (axis != -1 && axis != static_cast<int64_t>(d.size()) - 1)
    unsupported(n, "LayerNormalization over the last axis only");
  for (int k = 1; k < n.output_size(); ++k) {
    if (!n.output(k).empty() && readers_.count(n.output(k)))
      unsupported(n, "its mean or inverse deviation output is read");
  }
  const int x = tensor(n, 0);
  const int gamma = adopt(n, 1, Role::kParam);
  if (n.input_size() < 3 || n.input(2).empty()) unsupported(n, "LayerNormalization without a bias");
  const int beta = adopt(n, 2, Role::kParam);
  define(n, 0,
         b_.layer_norm_with(x, gamma, beta, out_.graph.unique_name(n.output(0)),
                            float_attr(n, "epsilon", 1e-5f)));
}

void OnnxImporter::split(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(d.size());
  if (axis < 0 || axis >= static_cast<int64_t>(d.size()))
    unsupported(n, "axis outside the input's rank");
  Dims sizes;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    sizes.assign(int_constant(n, 1).i.begin(), int_constant(n, 1).i.end());
    bounded(n, sizes, 1, "split size");
  } else {
    const int64_t parts = n.output_size();
    if (d[static_cast<size_t>(axis)] % parts != 0)
      unsupported(n, "an axis that does not split evenly");
    sizes.assign(static_cast<size_t>(parts), d[static_cast<size_t>(axis)] / parts);
  }
  if (static_cast<int>(sizes.size()) != n.output_size())
    unsupported(n, "split sizes do not match the outputs");
  // The last axis of a sequence-first value: sliced where it is held (onnx/sequence_first.cc).
  Swapped rows;
  const bool last = axis + 1 == static_cast<int64_t>(d.size()) && d.size() > 1;
  const int x = last ? rows_of(n, 0, &rows) : tensor(n, 0);
  const Dims held = out_.graph.tensors[x].shape;
  const int64_t held_axis = static_cast<int64_t>(held.size()) - 1;
  int64_t offset = 0;
  for (int k = 0; k < n.output_size(); ++k) {
    Dims out = d;
    out[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(k)];
    Dims part = rows.held >= 0 ? held : out;
    part.back() = out.back();
    const int y = fresh(n.output(k), part);
    out_.graph.add_op(OpCode::kSlice, {x}, {y},
                      named({{attr::slice::axis, rows.held >= 0 ? held_axis : axis},
                             {attr::slice::offset, offset}}));
    define_rows(n, k, y, rows, out);
    offset += sizes[static_cast<size_t>(k)];
  }
  if (offset != d[static_cast<size_t>(axis)])
    unsupported(n, "split sizes do not add up to the axis");
}

void OnnxImporter::slice(const onnx::NodeProto& n) {
  Dims d = shape_of(n.input(0));
  const Constant& starts = int_constant(n, 1);
  const Constant& ends = int_constant(n, 2);
  Dims axes;
  if (n.input_size() > 3 && !n.input(3).empty()) {
    axes.assign(int_constant(n, 3).i.begin(), int_constant(n, 3).i.end());
  } else {
    for (size_t k = 0; k < starts.i.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (n.input_size() > 4 && !n.input(4).empty()) {
    for (int64_t step : int_constant(n, 4).i) {
      if (step != 1) unsupported(n, "steps other than 1");
    }
  }
  if (starts.i.size() != axes.size() || ends.i.size() != axes.size()) {
    unsupported(n, "starts, ends and axes of different lengths");
  }
  // Slices of the last axis alone of a sequence-first value: where it is held
  // (onnx/sequence_first.cc).
  bool last_only = d.size() > 1;
  for (int64_t a : axes) {
    last_only = last_only && (a == -1 || a + 1 == static_cast<int64_t>(d.size()));
  }
  Swapped rows;
  int x = last_only ? rows_of(n, 0, &rows) : tensor(n, 0);
  Dims held = out_.graph.tensors[x].shape;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t axis = axes[k] < 0 ? axes[k] + static_cast<int64_t>(d.size()) : axes[k];
    if (axis < 0 || axis >= static_cast<int64_t>(d.size()))
      unsupported(n, "an axis outside the input's rank");
    const int64_t dim = d[static_cast<size_t>(axis)];
    const int64_t begin = clamp_index(starts.i[k], dim), end = clamp_index(ends.i[k], dim);
    if (end <= begin) unsupported(n, "an empty slice");
    if (begin == 0 && end == dim) continue;
    d[static_cast<size_t>(axis)] = end - begin;
    const int64_t held_axis = rows.held >= 0 ? static_cast<int64_t>(held.size()) - 1 : axis;
    held[static_cast<size_t>(held_axis)] = end - begin;
    const int y = fresh(n.output(0), held);
    out_.graph.add_op(OpCode::kSlice, {x}, {y},
                      named({{attr::slice::axis, held_axis}, {attr::slice::offset, begin}}));
    x = y;
  }
  define_rows(n, 0, x, rows, d);
}

// F.cross_entropy as torch exports it: the graph's loss, its labels a graph input that becomes
// the plan's label binding.
void OnnxImporter::cross_entropy_loss(const onnx::NodeProto& n) {
  const Dims scores = shape_of(n.input(0));
  const std::string reduction = attribute(n, "reduction") ? attribute(n, "reduction")->s() : "mean";
  if (reduction != "mean")
    unsupported(n, "reduction '" + reduction + "' (remat's loss is the mean)");
  if (n.input_size() > 2 && !n.input(2).empty()) unsupported(n, "class weights");
  if (scores.size() != 2) unsupported(n, "scores must be [batch, classes]");
  if (n.output_size() > 1 && !n.output(1).empty() && readers_.count(n.output(1)) != 0) {
    unsupported(n, "its log-probability output is read");
  }
  if (out_.graph.loss >= 0) unsupported(n, "a second loss");
  const int scores_tensor = tensor(n, 0);
  const int labels = tensor(n, 1);
  Tensor& l = out_.graph.tensors[labels];
  std::vector<int>& inputs = out_.graph.inputs;
  const auto bound = std::find(inputs.begin(), inputs.end(), labels);
  if (bound == inputs.end() || l.dtype != REMAT_DTYPE_I32 || l.shape != Dims{scores[0]}) {
    unsupported(n, "labels must be an integer graph input [batch]");
  }
  // The input binding becomes the label binding.
  inputs.erase(bound);
  l.role = Role::kLabel;
  out_.graph.labels.push_back(labels);
  define(n, 0, b_.softmax_cross_entropy(scores_tensor, labels));
}

void OnnxImporter::dropout(const onnx::NodeProto& n) {
  float ratio = 0.5f;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    const Constant& r = constant(n, 1);
    if (r.f.size() != 1) unsupported(n, "the ratio must be one float");
    ratio = r.f[0];
  }
  bool training = false;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const Constant& t = constant(n, 2);
    training = !t.i.empty() ? t.i[0] != 0 : !t.f.empty() && t.f[0] != 0.0f;
  }
  if (n.output_size() > 1 && !n.output(1).empty() && readers_.count(n.output(1))) {
    unsupported(n, "Dropout's mask output is read");
  }
  const int x = tensor(n, 0);
  // An eval-mode export passes the input through; remat trains, so a training-mode Dropout
  // drops with remat's RNG at the model's ratio.
  define(n, 0, training ? b_.dropout(x, ratio, out_.graph.unique_name(n.output(0))) : x);
}

}  // namespace compiler
}  // namespace remat
