// The ONNX importer's constant folding (onnx/importer.h): a node whose inputs are all constants
// (Constant nodes, integer initializers, Shape of a tensor, and whatever is computed from them
// alone) is evaluated while compiling, so the shape arithmetic an exporter writes (Shape ->
// Gather -> Div -> Cast -> Pow, masks built with Range, Equal and Where, a Reshape's computed
// shape) never reaches the plan. Float initializers are not folded: they may be parameters that
// train (import.cc routes their nodes to the layers). Tensors hold FLOAT (float32, as an ONNX
// runtime computes them) or INT64 elements; every other integer type and BOOL are held as INT64,
// every other float type as FLOAT. A node that cannot be folded is refused with its name, op,
// input shapes and the reason; no result may hold more than kMaxFolded elements.
#include <cmath>
#include <cstdio>
#include <limits>

#include "compiler/onnx/importer.h"
#include "plan/half_float.h"

namespace remat {
namespace compiler {
namespace {

constexpr int32_t kFloat = onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto_DataType_INT64;

// Whether ONNX element type |type| is held as FLOAT (else as INT64).
bool float_type(int64_t type) {
  return type == onnx::TensorProto_DataType_FLOAT || type == onnx::TensorProto_DataType_DOUBLE ||
         type == onnx::TensorProto_DataType_FLOAT16 || type == onnx::TensorProto_DataType_BFLOAT16;
}

bool int_type(int64_t type) {
  switch (type) {
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_UINT8:
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_UINT16:
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_UINT32:
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_UINT64:
    case onnx::TensorProto_DataType_BOOL: return true;
    default: return false;
  }
}

// Element |k| of |c| as a double (exact for every float and for integers below 2^53).
double value(const Constant& c, int64_t k) {
  return c.type == kFloat ? c.f[static_cast<size_t>(k)]
                          : static_cast<double>(c.i[static_cast<size_t>(k)]);
}

// |v| as a message shows it (%g: 1e+30, not thirty digits).
std::string number_text(double v) {
  char text[32];
  snprintf(text, sizeof text, "%g", v);
  return text;
}

// |v| wrapped to the integer type |to| as a two's complement machine stores it (a cast to INT32
// of 2^32 + 1 gives 1).
int64_t wrapped(int64_t v, int64_t to) {
  const uint64_t u = static_cast<uint64_t>(v);
  switch (to) {
    case onnx::TensorProto_DataType_INT8: return static_cast<int8_t>(u);
    case onnx::TensorProto_DataType_UINT8: return static_cast<uint8_t>(u);
    case onnx::TensorProto_DataType_INT16: return static_cast<int16_t>(u);
    case onnx::TensorProto_DataType_UINT16: return static_cast<uint16_t>(u);
    case onnx::TensorProto_DataType_INT32: return static_cast<int32_t>(u);
    case onnx::TensorProto_DataType_UINT32: return static_cast<uint32_t>(u);
    default: return v;  // INT64; UINT64 held as its bits
  }
}

// |f| rounded to the float type |to| (to nearest even) and held as float32.
float rounded(float f, int64_t to) {
  if (to == onnx::TensorProto_DataType_FLOAT16) return f16_to_f32(f32_to_f16(f));
  if (to == onnx::TensorProto_DataType_BFLOAT16) return bf16_to_f32(f32_to_bf16(f));
  return f;  // FLOAT, and DOUBLE held as float32
}

// Row-major strides of |d|.
Dims strides_of(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t k = d.size(); k-- > 1;) s[k - 1] = s[k] * d[k];
  return s;
}

// Maps element k of a result of dims |out| to the element of an input of dims |in| that ONNX's
// (numpy's) broadcasting reads for it: |in| right-aligned to |out|, its dims of 1 repeated.
class Broadcast {
 public:
  Broadcast(const Dims& in, const Dims& out) : out_strides_(strides_of(out)) {
    const Dims in_strides = strides_of(in);
    steps_.assign(out.size(), 0);
    const size_t shift = out.size() - in.size();
    for (size_t k = 0; k < in.size(); ++k) steps_[shift + k] = in[k] == 1 ? 0 : in_strides[k];
  }
  int64_t operator()(int64_t k) const {
    int64_t at = 0;
    for (size_t d = 0; d < steps_.size(); ++d) {
      at += k / out_strides_[d] * steps_[d];
      k %= out_strides_[d];
    }
    return at;
  }

 private:
  Dims out_strides_, steps_;
};

}  // namespace

void OnnxImporter::fold(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  const auto has_input = [&](int k) { return k < n.input_size() && !n.input(k).empty(); };
  // A result of |type| and |dims|, its storage sized; refused past kMaxFolded elements.
  const auto make = [&](int32_t type, const Dims& dims) {
    Constant c;
    c.type = type;
    c.dims = dims;
    int64_t count = 1;
    for (int64_t d : dims) {
      if (d < 0 || (d > 0 && count > kMaxFolded / d)) {
        unsupported(n, "folding it would make a constant of dims " + dims_text(dims) +
                           " (at most 2^24 elements)");
      }
      count *= d;
    }
    if (type == kFloat) {
      c.f.resize(static_cast<size_t>(count));
    } else {
      c.i.resize(static_cast<size_t>(count));
    }
    return c;
  };
  // Sets element |k| of |c| from |v| (a float, or an integer below 2^53: a count, a 0 or 1).
  const auto set = [](Constant& c, int64_t k, double v) {
    if (c.type == kFloat) {
      c.f[static_cast<size_t>(k)] = static_cast<float>(v);
    } else {
      c.i[static_cast<size_t>(k)] = static_cast<int64_t>(v);
    }
  };
  // Element |k| of |c| = element |j| of |from| (the same type): integers copied exactly.
  const auto copy = [](Constant& c, int64_t k, const Constant& from, int64_t j) {
    if (c.type == kFloat) {
      c.f[static_cast<size_t>(k)] = from.f[static_cast<size_t>(j)];
    } else {
      c.i[static_cast<size_t>(k)] = from.i[static_cast<size_t>(j)];
    }
  };
  // Input |k| as a vector of integers (axes, shapes, indices, repeats).
  const auto ints = [&](int k) -> const Dims& {
    const Constant& c = constant(n, k);
    if (c.type != kInt64 || c.dims.size() > 1)
      unsupported(n, "input " + std::to_string(k) + " must be a scalar or vector of integers");
    return c.i;
  };
  // |axis| of a rank-|rank| tensor, negative counting from the end; refused outside it.
  const auto axis_of = [&](int64_t axis, int64_t rank) {
    if (axis < -rank || axis >= rank) {
      unsupported(n, "axis " + std::to_string(axis) + " outside a rank-" + std::to_string(rank) +
                         " tensor");
    }
    return axis < 0 ? axis + rank : axis;
  };
  // The axes of a Squeeze, Unsqueeze or Reduce*: input 1 from |input_opset| on, else the attribute.
  const auto axes_of = [&](int64_t input_opset) -> Dims {
    if (opset_ >= input_opset) return has_input(1) ? ints(1) : Dims{};
    return ints_attr(n, "axes", {});
  };

  if (op == "Constant") {
    const onnx::AttributeProto* v = attribute(n, "value");
    if (v != nullptr && v->has_t()) return define_constant(n, 0, decode(v->t(), "constant"));
    Constant c;
    if ((v = attribute(n, "value_float")) != nullptr ||
        (v = attribute(n, "value_floats")) != nullptr) {
      c.type = kFloat;
      if (v->name() == "value_float") {
        c.f = {v->f()};
      } else {
        c.f.assign(v->floats().begin(), v->floats().end());
        c.dims = {static_cast<int64_t>(c.f.size())};
      }
    } else if ((v = attribute(n, "value_int")) != nullptr ||
               (v = attribute(n, "value_ints")) != nullptr) {
      c.type = kInt64;
      if (v->name() == "value_int") {
        c.i = {v->i()};
      } else {
        c.i.assign(v->ints().begin(), v->ints().end());
        c.dims = {static_cast<int64_t>(c.i.size())};
      }
    } else {
      unsupported(n, "a Constant of a tensor, float(s) or int(s) only");
    }
    return define_constant(n, 0, c);
  }
  if (op == "Shape" || op == "Size") {
    const Dims d = shape_of(n.input(0));
    if (d.empty() && !is_constant(n.input(0))) unsupported(n, "the input's shape is not known");
    if (op == "Size") {
      Constant c = make(kInt64, {});
      c.i[0] = product(d);
      return define_constant(n, 0, c);
    }
    // start and end (opset 15), clamped to the rank as ONNX defines.
    const int64_t rank = static_cast<int64_t>(d.size());
    const int64_t begin = clamp_index(int_attr(n, "start", 0), rank),
                  end = clamp_index(int_attr(n, "end", rank), rank);
    Constant c = make(kInt64, {std::max<int64_t>(0, end - begin)});
    for (int64_t k = begin; k < end; ++k) c.i[static_cast<size_t>(k - begin)] = d[k];
    return define_constant(n, 0, c);
  }
  const int64_t to = op == "Cast" ? int_attr(n, "to", 0) : 0;
  if (op == "Identity" ||
      (op == "Cast" && constant(n, 0).type == kFloat && to == onnx::TensorProto_DataType_FLOAT)) {
    // The same values under another name; an initializer stays one (OnnxImporter::adopt), so a
    // weight passed through Identity still trains as itself.
    constants_[n.output(0)] = constant(n, 0);
    return;
  }
  if (op == "Cast") {
    const Constant& x = constant(n, 0);
    if (!float_type(to) && !int_type(to))
      unsupported(n, "a cast to element type " + std::to_string(to));
    Constant c = make(float_type(to) ? kFloat : kInt64, x.dims);
    for (int64_t k = 0; k < x.numel(); ++k) {
      if (to == onnx::TensorProto_DataType_BOOL) {
        set(c, k, value(x, k) != 0.0 ? 1.0 : 0.0);
      } else if (c.type == kInt64) {
        int64_t v = x.type == kInt64 ? x.i[static_cast<size_t>(k)] : 0;
        if (x.type == kFloat) {
          const double f = x.f[static_cast<size_t>(k)];
          if (!(std::fabs(f) < 9.2e18)) unsupported(n, "a cast to integers of " + number_text(f));
          v = static_cast<int64_t>(f);  // toward zero
        }
        c.i[static_cast<size_t>(k)] = wrapped(v, to);
      } else {
        c.f[static_cast<size_t>(k)] = rounded(static_cast<float>(value(x, k)), to);
      }
    }
    return define_constant(n, 0, c);
  }
  if (op == "ConstantOfShape") {
    const Dims& shape = ints(0);
    bounded(n, shape, 0, "dim");
    Constant fill;
    fill.type = kFloat;
    fill.f = {0.0f};
    if (const onnx::AttributeProto* v = attribute(n, "value")) fill = decode(v->t(), "value");
    if (fill.numel() != 1) unsupported(n, "its value must hold one element");
    Constant c = make(fill.type, shape);
    for (int64_t k = 0; k < c.numel(); ++k) copy(c, k, fill, 0);
    return define_constant(n, 0, c);
  }
  if (op == "Gather") {
    const Constant& data = constant(n, 0);
    const Constant& index = constant(n, 1);
    if (index.type != kInt64) unsupported(n, "the indices must be integers");
    const int64_t rank = static_cast<int64_t>(data.dims.size());
    if (rank == 0) unsupported(n, "a Gather from a scalar");
    const int64_t axis = axis_of(int_attr(n, "axis", 0), rank);
    Dims dims(data.dims.begin(), data.dims.begin() + axis);
    dims.insert(dims.end(), index.dims.begin(), index.dims.end());
    dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    Constant c = make(data.type, dims);
    const int64_t outer = product(data.dims, 0, axis), extent = data.dims[axis],
                  inner = product(data.dims, axis + 1);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < index.numel(); ++j) {
        int64_t at = index.i[static_cast<size_t>(j)];
        if (at < -extent || at >= extent)
          unsupported(n, "index " + std::to_string(at) + " outside the data's axis");
        if (at < 0) at += extent;
        for (int64_t r = 0; r < inner; ++r) {
          copy(c, (o * index.numel() + j) * inner + r, data, (o * extent + at) * inner + r);
        }
      }
    }
    return define_constant(n, 0, c);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    Constant c = constant(n, 0);
    const Dims axes = axes_of(13);
    const int64_t rank = static_cast<int64_t>(c.dims.size());
    Dims dims;
    if (op == "Unsqueeze") {
      const int64_t out_rank = rank + static_cast<int64_t>(axes.size());
      std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
      for (int64_t a : axes) {
        const int64_t at = axis_of(a, out_rank);
        if (inserted[at]) unsupported(n, "axis " + std::to_string(a) + " given twice");
        inserted[at] = true;
      }
      for (int64_t k = 0, from = 0; k < out_rank; ++k)
        dims.push_back(inserted[k] ? 1 : c.dims[from++]);
    } else {
      std::vector<bool> removed(static_cast<size_t>(rank), axes.empty());
      for (int64_t a : axes) removed[axis_of(a, rank)] = true;
      for (int64_t k = 0; k < rank; ++k) {
        if (removed[k] && c.dims[k] != 1) {
          if (!axes.empty()) unsupported(n, "axis " + std::to_string(k) + " is not of size 1");
          removed[k] = false;  // no axes: only the dims of 1 go
        }
        if (!removed[k]) dims.push_back(c.dims[k]);
      }
    }
    c.dims = dims;
    return define_constant(n, 0, c);
  }
  if (op == "Flatten") {
    Constant c = constant(n, 0);
    const int64_t rank = static_cast<int64_t>(c.dims.size());
    const int64_t axis = int_attr(n, "axis", 1);
    const int64_t at = axis == rank ? rank : axis_of(axis, rank);
    c.dims = {product(c.dims, 0, at), product(c.dims, at)};
    return define_constant(n, 0, c);
  }
  if (op == "Concat") {
    const Constant& first = constant(n, 0);
    const int64_t rank = static_cast<int64_t>(first.dims.size());
    if (rank == 0) unsupported(n, "a Concat of scalars");
    const int64_t axis = axis_of(int_attr(n, "axis", 0), rank);
    Dims dims = first.dims;
    dims[axis] = 0;
    for (int k = 0; k < n.input_size(); ++k) {
      const Constant& part = constant(n, k);
      if (part.type != first.type || part.dims.size() != first.dims.size())
        unsupported(n, "its inputs differ in element type or rank");
      for (int64_t d = 0; d < rank; ++d) {
        if (d != axis && part.dims[d] != first.dims[d])
          unsupported(n, "its inputs differ in dims other than the axis");
      }
      dims[axis] += part.dims[axis];
    }
    Constant c = make(first.type, dims);
    const int64_t outer = product(dims, 0, axis), inner = product(dims, axis + 1);
    int64_t offset = 0;  // along the axis
    for (int k = 0; k < n.input_size(); ++k) {
      const Constant& part = constant(n, k);
      const int64_t extent = part.dims[axis];
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < extent * inner; ++j) {
          copy(c, (o * dims[axis] + offset) * inner + j, part, o * extent * inner + j);
        }
      }
      offset += extent;
    }
    return define_constant(n, 0, c);
  }
  if (op == "Slice") {
    const Constant& data = constant(n, 0);
    const int64_t rank = static_cast<int64_t>(data.dims.size());
    Dims starts, ends, axes, steps;
    if (opset_ >= 10) {
      starts = ints(1);
      ends = ints(2);
      if (has_input(3)) axes = ints(3);
      if (has_input(4)) steps = ints(4);
    } else {
      starts = ints_attr(n, "starts", {});
      ends = ints_attr(n, "ends", {});
      axes = ints_attr(n, "axes", {});
    }
    if (axes.empty()) {
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size()) {
      unsupported(n, "starts, ends, axes and steps of different lengths");
    }
    Dims begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1), dims = data.dims;
    for (size_t k = 0; k < starts.size(); ++k) {
      const int64_t a = axis_of(axes[k], rank), extent = data.dims[a], s = steps[k];
      if (s == 0) unsupported(n, "a step of 0");
      // ONNX's clamping: to [0, extent] going forward (see below going back).
      int64_t from = starts[k] < 0 ? starts[k] + extent : starts[k];
      int64_t to = ends[k] < 0 ? std::max<int64_t>(ends[k], INT64_MIN + extent) + extent : ends[k];
      if (s > 0) {
        from = std::min(std::max<int64_t>(from, 0), extent);
        to = std::min(std::max<int64_t>(to, 0), extent);
      } else {  // starts to [0, extent - 1], ends to [-1, extent - 1]
        from = std::min(std::max<int64_t>(from, 0), extent - 1);
        to = std::min(std::max<int64_t>(to, -1), extent - 1);
      }
      const int64_t span = s > 0 ? to - from : from - to, stride = s > 0 ? s : -s;
      begin[a] = from;
      step[a] = s;
      dims[a] = span <= 0 ? 0 : (span + stride - 1) / stride;
    }
    Constant c = make(data.type, dims);
    const Dims in_strides = strides_of(data.dims), out_strides = strides_of(dims);
    for (int64_t k = 0; k < c.numel(); ++k) {
      int64_t rest = k, at = 0;
      for (int64_t d = 0; d < rank; ++d) {
        at += (begin[d] + rest / out_strides[d] * step[d]) * in_strides[d];
        rest %= out_strides[d];
      }
      copy(c, k, data, at);
    }
    return define_constant(n, 0, c);
  }
  if (op == "Reshape") {
    Constant c = constant(n, 0);
    Dims shape = ints(1);
    const bool allow_zero = int_attr(n, "allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] == 0 && !allow_zero) {
        if (k >= c.dims.size()) unsupported(n, "a 0 in the shape past the input's rank");
        shape[k] = c.dims[k];
      }
      if (shape[k] == -1) {
        if (infer >= 0) unsupported(n, "two -1 in the shape");
        infer = static_cast<int64_t>(k);
        continue;
      }
      bounded(n, {shape[k]}, 0, "dim");
      if (__builtin_mul_overflow(known, shape[k], &known) || known > kMaxConstantElements)
        unsupported(n, "shape " + dims_text(shape) + " holds too many elements");
    }
    if (infer >= 0) {
      if (known == 0 || c.numel() % known != 0)
        unsupported(n, "its shape " + dims_text(shape) + " does not divide the input");
      shape[static_cast<size_t>(infer)] = c.numel() / known;
    }
    if (product(shape) != c.numel())
      unsupported(n, "shape " + dims_text(shape) + " holds another element count");
    c.dims = shape;
    return define_constant(n, 0, c);
  }
  if (op == "Transpose") {
    const Constant& x = constant(n, 0);
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    Dims perm = ints_attr(n, "perm", {});
    if (perm.empty()) {
      for (int64_t k = rank; k-- > 0;) perm.push_back(k);
    }
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    if (static_cast<int64_t>(perm.size()) != rank)
      unsupported(n, "perm is not of the input's rank");
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[p]) unsupported(n, "perm is not a permutation");
      seen[p] = true;
    }
    Dims dims;
    for (int64_t p : perm) dims.push_back(x.dims[p]);
    Constant c = make(x.type, dims);
    const Dims in_strides = strides_of(x.dims), out_strides = strides_of(dims);
    for (int64_t k = 0; k < c.numel(); ++k) {
      int64_t rest = k, at = 0;
      for (int64_t d = 0; d < rank; ++d) {
        at += rest / out_strides[d] * in_strides[perm[d]];
        rest %= out_strides[d];
      }
      copy(c, k, x, at);
    }
    return define_constant(n, 0, c);
  }
  if (op == "Range") {
    const Constant& start = constant(n, 0);
    if (start.numel() != 1 || constant(n, 1).numel() != 1 || constant(n, 2).numel() != 1 ||
        constant(n, 1).type != start.type || constant(n, 2).type != start.type) {
      unsupported(n, "Range takes three scalars of one type");
    }
    if (start.type == kFloat) {
      const double from = start.f[0], limit = constant(n, 1).f[0], delta = constant(n, 2).f[0];
      if (delta == 0 || !std::isfinite(from) || !std::isfinite(limit) || !std::isfinite(delta))
        unsupported(n, "a Range with delta 0 or a bound that is not finite");
      const double count = std::max(std::ceil((limit - from) / delta), 0.0);
      if (count > static_cast<double>(kMaxFolded))
        unsupported(n, "a Range of more than 2^24 values");
      Constant c = make(kFloat, {static_cast<int64_t>(count)});
      for (int64_t k = 0; k < c.numel(); ++k)
        c.f[static_cast<size_t>(k)] = static_cast<float>(from + k * delta);
      return define_constant(n, 0, c);
    }
    const int64_t from = start.i[0], limit = constant(n, 1).i[0], delta = constant(n, 2).i[0];
    if (delta == 0) unsupported(n, "a Range with delta 0");
    // max(ceil((limit - start) / delta), 0) values, computed without overflow.
    const __int128 span = static_cast<__int128>(limit) - from;
    __int128 count = span / delta + (span % delta != 0 && (span > 0) == (delta > 0) ? 1 : 0);
    if (count < 0) count = 0;
    if (count > kMaxFolded) unsupported(n, "a Range of more than 2^24 values");
    Constant c = make(kInt64, {static_cast<int64_t>(count)});
    for (int64_t k = 0; k < c.numel(); ++k)
      c.i[static_cast<size_t>(k)] = static_cast<int64_t>(from + static_cast<__int128>(k) * delta);
    return define_constant(n, 0, c);
  }
  if (op == "Trilu") {
    // The upper (j - i >= k) or lower (j - i <= k) triangle of each matrix of the last two axes.
    Constant c = constant(n, 0);
    if (c.dims.size() < 2) unsupported(n, "Trilu takes a tensor of rank 2 or more");
    int64_t k = 0;
    if (has_input(1)) {
      const Constant& diagonal = constant(n, 1);
      if (diagonal.type != kInt64 || diagonal.numel() != 1) unsupported(n, "k must be an integer");
      k = diagonal.i[0];
    }
    const bool upper = int_attr(n, "upper", 1) != 0;
    const int64_t rows = c.dims[c.dims.size() - 2], columns = c.dims.back();
    for (int64_t e = 0; e < c.numel(); ++e) {
      const int64_t i = e / columns % rows, j = e % columns;
      const bool kept = upper ? j - i >= k : j - i <= k;
      if (!kept) set(c, e, 0.0);
    }
    return define_constant(n, 0, c);
  }
  if (op == "Expand" || op == "Tile") {
    const Constant& x = constant(n, 0);
    const Dims& shape = ints(1);
    bounded(n, shape, 0, op == "Expand" ? "dim" : "repeat");
    Dims dims;
    if (op == "Expand") {
      // Bidirectional broadcasting of the input's dims and the shape.
      const size_t rank = std::max(x.dims.size(), shape.size());
      for (size_t k = 0; k < rank; ++k) {
        const int64_t a = k + x.dims.size() >= rank ? x.dims[k + x.dims.size() - rank] : 1;
        const int64_t b = k + shape.size() >= rank ? shape[k + shape.size() - rank] : 1;
        if (a != b && a != 1 && b != 1)
          unsupported(n, "shape " + dims_text(shape) + " does not broadcast with the input");
        dims.push_back(a == 1 ? b : a);
      }
      Constant c = make(x.type, dims);
      const Broadcast from(x.dims, dims);
      for (int64_t k = 0; k < c.numel(); ++k) copy(c, k, x, from(k));
      return define_constant(n, 0, c);
    }
    if (shape.size() != x.dims.size()) unsupported(n, "repeats are not of the input's rank");
    for (size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] > 0 && x.dims[k] > kMaxFolded / shape[k]) unsupported(n, "too many repeats");
      dims.push_back(x.dims[k] * shape[k]);
    }
    Constant c = make(x.type, dims);
    const Dims in_strides = strides_of(x.dims), out_strides = strides_of(dims);
    for (int64_t k = 0; k < c.numel(); ++k) {
      int64_t rest = k, at = 0;
      for (size_t d = 0; d < dims.size(); ++d) {
        at += rest / out_strides[d] % x.dims[d] * in_strides[d];
        rest %= out_strides[d];
      }
      copy(c, k, x, at);
    }
    return define_constant(n, 0, c);
  }
  if (op == "ReduceSum" || op == "ReduceProd" || op == "ReduceMax" || op == "ReduceMin" ||
      op == "ReduceMean") {
    const Constant& x = constant(n, 0);
    const int64_t rank = static_cast<int64_t>(x.dims.size());
    const Dims axes = axes_of(op == "ReduceSum" ? 13 : 18);
    std::vector<bool> reduced(static_cast<size_t>(rank),
                              axes.empty() && int_attr(n, "noop_with_empty_axes", 0) == 0);
    for (int64_t a : axes) reduced[axis_of(a, rank)] = true;
    const bool keep = int_attr(n, "keepdims", 1) != 0;
    Dims dims, kept;  // the result's dims; |kept|: each input dim, 1 where reduced
    for (int64_t k = 0; k < rank; ++k) {
      kept.push_back(reduced[k] ? 1 : x.dims[k]);
      if (!reduced[k] || keep) dims.push_back(kept.back());
    }
    if ((op == "ReduceMax" || op == "ReduceMin") && x.numel() == 0)
      unsupported(n, "a maximum or minimum of no elements");
    Constant c = make(x.type, dims);
    const Dims in_strides = strides_of(x.dims), kept_strides = strides_of(kept);
    // The result element element |k| of |x| adds to.
    const auto reduced_at = [&](int64_t k) {
      int64_t rest = k, at = 0;
      for (int64_t d = 0; d < rank; ++d) {
        at += (reduced[d] ? 0 : rest / in_strides[d]) * kept_strides[d];
        rest %= in_strides[d];
      }
      return at;
    };
    const int64_t count = c.numel() > 0 ? x.numel() / c.numel() : 0;
    if (x.type == kInt64) {  // integers exactly, refused where they overflow
      std::vector<int64_t> acc(static_cast<size_t>(c.numel()), op == "ReduceProd" ? 1 : 0);
      std::vector<bool> started(acc.size(), false);
      for (int64_t k = 0; k < x.numel(); ++k) {
        const size_t at = static_cast<size_t>(reduced_at(k));
        const int64_t v = x.i[static_cast<size_t>(k)];
        int64_t& a = acc[at];
        bool overflow = false;
        if (op == "ReduceMax" || op == "ReduceMin") {
          a = !started[at] ? v : op == "ReduceMax" ? std::max(a, v) : std::min(a, v);
        } else if (op == "ReduceProd") {
          overflow = __builtin_mul_overflow(a, v, &a);
        } else {
          overflow = __builtin_add_overflow(a, v, &a);
        }
        if (overflow) unsupported(n, "integer arithmetic that overflows 64 bits");
        started[at] = true;
      }
      for (size_t k = 0; k < acc.size(); ++k) {
        c.i[k] = op == "ReduceMean" && count > 0 ? acc[k] / count : acc[k];
      }
      return define_constant(n, 0, c);
    }
    std::vector<double> acc(static_cast<size_t>(product(kept)),
                            op == "ReduceProd"  ? 1.0
                            : op == "ReduceMax" ? -std::numeric_limits<double>::infinity()
                            : op == "ReduceMin" ? std::numeric_limits<double>::infinity()
                                                : 0.0);
    for (int64_t k = 0; k < x.numel(); ++k) {
      double& a = acc[static_cast<size_t>(reduced_at(k))];
      const double v = value(x, k);
      a = op == "ReduceProd"  ? a * v
          : op == "ReduceMax" ? std::max(a, v)
          : op == "ReduceMin" ? std::min(a, v)
                              : a + v;
    }
    for (size_t k = 0; k < acc.size(); ++k) {
      set(c, static_cast<int64_t>(k),
          op == "ReduceMean" ? acc[k] / static_cast<double>(count) : acc[k]);
    }
    return define_constant(n, 0, c);
  }
  // Elementwise ops on one input.
  if (op == "Neg" || op == "Abs" || op == "Sign" || op == "Not" || op == "Sqrt" ||
      op == "Reciprocal" || op == "Floor" || op == "Ceil" || op == "Round" || op == "Exp" ||
      op == "Log") {
    const Constant& x = constant(n, 0);
    const bool on_ints = op == "Neg" || op == "Abs" || op == "Sign" || op == "Not";
    if (x.type == kInt64 && !on_ints) unsupported(n, "it takes float inputs");
    Constant c = make(x.type, x.dims);
    for (int64_t k = 0; k < x.numel(); ++k) {
      if (x.type == kInt64) {  // exactly, as integers
        const int64_t v = x.i[static_cast<size_t>(k)];
        if (op != "Not" && v == INT64_MIN) unsupported(n, "an integer overflow");
        c.i[static_cast<size_t>(k)] = op == "Neg"    ? -v
                                      : op == "Abs"  ? (v < 0 ? -v : v)
                                      : op == "Sign" ? (v > 0) - (v < 0)
                                                     : (v == 0 ? 1 : 0);  // Not
        continue;
      }
      const double v = value(x, k);
      set(c, k,
          op == "Neg"          ? -v
          : op == "Abs"        ? std::fabs(v)
          : op == "Sign"       ? (v > 0) - (v < 0)
          : op == "Not"        ? (v == 0 ? 1 : 0)
          : op == "Sqrt"       ? std::sqrt(static_cast<float>(v))
          : op == "Reciprocal" ? 1.0f / static_cast<float>(v)
          : op == "Floor"      ? std::floor(v)
          : op == "Ceil"       ? std::ceil(v)
          : op == "Round"      ? std::nearbyint(v)  // ties to even, as ONNX rounds
          : op == "Exp"        ? std::exp(static_cast<float>(v))
                               : std::log(static_cast<float>(v)));
    }
    return define_constant(n, 0, c);
  }
  // Elementwise ops on two or three inputs, with broadcasting.
  const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                       op == "GreaterOrEqual";
  const bool logic = op == "And" || op == "Or" || op == "Xor";
  const bool arithmetic = op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" ||
                          op == "Mod" || op == "Min" || op == "Max" || op == "Sum" || op == "Mean";
  if (op == "Where" || compare || logic || arithmetic) {
    const bool where = op == "Where";
    const int first = where ? 1 : 0;
    // Variadic Min, Max, Sum and Mean fold their inputs from the left.
    Constant c = constant(n, first);
    const int last = where ? 2 : n.input_size() - 1;
    if (n.input_size() < (where ? 3 : 1) || (!where && !arithmetic && n.input_size() != 2))
      unsupported(n, "a wrong number of inputs");
    if (where && constant(n, 0).type != kInt64) unsupported(n, "the condition must be boolean");
    for (int input = first + 1; input <= last; ++input) {
      const Constant& a = c;
      const Constant& b = constant(n, input);
      if (a.type != b.type && op != "Pow") unsupported(n, "its inputs differ in element type");
      // The result's dims: numpy's broadcasting of every input (Where's condition too).
      Dims dims;
      const Dims* shapes[3] = {&a.dims, &b.dims, where ? &constant(n, 0).dims : &b.dims};
      size_t rank = 0;
      for (const Dims* s : shapes) rank = std::max(rank, s->size());
      for (size_t k = 0; k < rank; ++k) {
        int64_t d = 1;
        for (const Dims* s : shapes) {
          const int64_t e = k + s->size() >= rank ? (*s)[k + s->size() - rank] : 1;
          if (e != 1 && d != 1 && e != d) unsupported(n, "its inputs do not broadcast");
          if (e != 1) d = e;
        }
        dims.push_back(d);
      }
      Constant out = make(compare || logic ? kInt64 : a.type, dims);
      const Broadcast from_a(a.dims, dims), from_b(b.dims, dims);
      const Constant* condition = where ? &constant(n, 0) : nullptr;
      const Broadcast from_c(where ? condition->dims : b.dims, dims);
      for (int64_t k = 0; k < out.numel(); ++k) {
        const int64_t ia = from_a(k), ib = from_b(k);
        if (where) {
          if (condition->i[static_cast<size_t>(from_c(k))] != 0) {
            copy(out, k, a, ia);
          } else {
            copy(out, k, b, ib);
          }
          continue;
        }
        if (compare || logic) {
          // Integers compared as integers (as doubles, values past 2^53 would merge).
          bool less, greater, equal;
          if (a.type == kFloat) {
            const float x = a.f[static_cast<size_t>(ia)], y = b.f[static_cast<size_t>(ib)];
            less = x<y, greater = x> y, equal = x == y;  // a NaN: none of them
          } else {
            const int64_t x = a.i[static_cast<size_t>(ia)], y = b.i[static_cast<size_t>(ib)];
            less = x<y, greater = x> y, equal = x == y;
          }
          const bool p = value(a, ia) != 0, q = value(b, ib) != 0;
          set(out, k,
              op == "Equal"            ? equal
              : op == "Less"           ? less
              : op == "Greater"        ? greater
              : op == "LessOrEqual"    ? less || equal
              : op == "GreaterOrEqual" ? greater || equal
              : op == "And"            ? p && q
              : op == "Or"             ? p || q
                                       : p != q);
          continue;
        }
        if (a.type == kFloat) {
          const float x = a.f[static_cast<size_t>(ia)];
          const float y = static_cast<float>(value(b, ib));
          set(out, k,
              op == "Add"   ? x + y
              : op == "Sub" ? x - y
              : op == "Mul" ? x * y
              : op == "Div" ? x / y
              : op == "Pow" ? std::pow(x, y)
              : op == "Mod"
                  ? (int_attr(n, "fmod", 0) != 0 ? std::fmod(x, y) : x - std::floor(x / y) * y)
              : op == "Min" ? std::min(x, y)
              : op == "Max" ? std::max(x, y)
                            : x + y);  // Sum and Mean
          continue;
        }
        const int64_t x = a.i[static_cast<size_t>(ia)];
        if (b.type != kInt64) unsupported(n, "an integer raised to a float power");
        const int64_t y = b.i[static_cast<size_t>(ib)];
        int64_t v = 0;
        bool overflow = false;
        if (op == "Add" || op == "Sum" || op == "Mean") {
          overflow = __builtin_add_overflow(x, y, &v);
        } else if (op == "Sub") {
          overflow = __builtin_sub_overflow(x, y, &v);
        } else if (op == "Mul") {
          overflow = __builtin_mul_overflow(x, y, &v);
        } else if (op == "Div" || op == "Mod") {
          if (y == 0 || (x == INT64_MIN && y == -1)) unsupported(n, "an integer division by 0");
          // Div truncates toward zero; Mod takes the divisor's sign unless fmod is set.
          v = op == "Div" ? x / y : x % y;
          if (op == "Mod" && int_attr(n, "fmod", 0) == 0 && v != 0 && ((v < 0) != (y < 0))) v += y;
        } else if (op == "Pow") {
          if (y < 0) unsupported(n, "an integer raised to a negative power");
          // Square and multiply: 63 squarings at most, whatever y.
          v = 1;
          int64_t base = x;
          for (int64_t e = y; e > 0 && !overflow; e >>= 1) {
            if (e & 1) overflow = __builtin_mul_overflow(v, base, &v);
            if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
          }
        } else {
          v = op == "Min" ? std::min(x, y) : std::max(x, y);
        }
        if (overflow) unsupported(n, "integer arithmetic that overflows 64 bits");
        out.i[static_cast<size_t>(k)] = v;
      }
      c = std::move(out);
    }
    if (op == "Mean") {
      const double count = n.input_size();
      for (int64_t k = 0; k < c.numel(); ++k) {
        if (c.type == kFloat) {
          c.f[static_cast<size_t>(k)] /= static_cast<float>(count);
        } else {
          c.i[static_cast<size_t>(k)] /= static_cast<int64_t>(count);
        }
      }
    }
    return define_constant(n, 0, c);
  }
  unsupported(n, "remat does not fold this op on constants");
}

}  // namespace compiler
}  // namespace remat
