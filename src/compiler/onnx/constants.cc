// The ONNX importer's constants (onnx/importer.h): initializers and Constant nodes decoded, and
// the shape arithmetic on them evaluated while compiling.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "compiler/onnx/importer.h"

namespace remat {
namespace compiler {

Constant decode(const onnx::TensorProto& t, const std::string& what) {
  Constant c;
  c.type = t.data_type();
  c.dims.assign(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t d : c.dims) {
    if (d < 0 || (d > 0 && n > kMaxConstantElements / d)) {
      throw CompileError(what + " '" + t.name() + "' has dims " + dims_text(c.dims) +
                         " (each at least 0, at most " + std::to_string(kMaxConstantElements) +
                         " elements)");
    }
    n *= d;
  }
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    throw CompileError(what + " '" + t.name() +
                       "' keeps its data in an external file, which remat does not read");
  }
  const std::string& raw = t.raw_data();
  // The element count the data holds: raw bytes over the item size, else the typed field's.
  auto require = [&](size_t item, int typed, const char* type) {
    const bool from_raw = !raw.empty();
    const uint64_t held = from_raw ? raw.size() / item : static_cast<uint64_t>(typed);
    if (held != static_cast<uint64_t>(n) || (from_raw && raw.size() % item != 0)) {
      throw CompileError(
          what + " '" + t.name() + "': " +
          (from_raw ? std::to_string(raw.size()) + " bytes" : std::to_string(typed) + " values") +
          " of " + type + " data for " + std::to_string(n) + " elements " + dims_text(c.dims));
    }
    return from_raw;
  };
  // |out| from the raw bytes (whose size require() checked), else from the typed field.
  auto fill = [&](auto* out, const auto& typed, const char* type) {
    using T = typename std::remove_pointer_t<decltype(out)>::value_type;
    if (require(sizeof(T), typed.size(), type)) {
      out->resize(static_cast<size_t>(n));
      std::memcpy(out->data(), raw.data(), raw.size());
    } else {
      out->assign(typed.begin(), typed.end());
    }
  };
  switch (c.type) {
    case onnx::TensorProto_DataType_FLOAT: fill(&c.f, t.float_data(), "float"); break;
    case onnx::TensorProto_DataType_INT64: fill(&c.i, t.int64_data(), "int64"); break;
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_BOOL: {  // widened; BOOL is Dropout's training_mode
      const bool boolean = c.type == onnx::TensorProto_DataType_BOOL;
      if (require(boolean ? 1 : 4, t.int32_data_size(), boolean ? "bool" : "int32")) {
        c.i.resize(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) {
          int32_t v = 0;
          if (boolean) {
            v = raw[static_cast<size_t>(k)] != 0;
          } else {
            std::memcpy(&v, raw.data() + 4 * k, 4);
          }
          c.i[static_cast<size_t>(k)] = v;
        }
      } else {
        c.i.assign(t.int32_data().begin(), t.int32_data().end());
        if (boolean) {
          for (int64_t& v : c.i) v = v != 0;
        }
      }
      c.type = onnx::TensorProto_DataType_INT64;
      break;
    }
    default:
      throw CompileError(what + " '" + t.name() + "' has element type " +
                         onnx::TensorProto_DataType_Name(c.type) +
                         " (remat reads FLOAT, INT64, INT32 and BOOL constants)");
  }
  return c;
}

// Shape arithmetic and constants: evaluated here, never in the plan.
void OnnxImporter::fold(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Constant") {
    const onnx::AttributeProto* v = attribute(n, "value");
    if (v != nullptr && v->has_t()) return define_constant(n, 0, decode(v->t(), "constant"));
    Constant c;
    if ((v = attribute(n, "value_float")) != nullptr ||
        (v = attribute(n, "value_floats")) != nullptr) {
      c.type = onnx::TensorProto_DataType_FLOAT;
      if (v->name() == "value_float") {
        c.f = {v->f()};
      } else {
        c.f.assign(v->floats().begin(), v->floats().end());
        c.dims = {static_cast<int64_t>(c.f.size())};
      }
    } else if ((v = attribute(n, "value_int")) != nullptr ||
               (v = attribute(n, "value_ints")) != nullptr) {
      c.type = onnx::TensorProto_DataType_INT64;
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
  if (op == "Shape") {
    Constant c;
    c.type = onnx::TensorProto_DataType_INT64;
    const Dims d = shape_of(n.input(0));
    if (d.empty()) unsupported(n, "the input's shape is not known");
    // start and end (opset 15), clamped to the rank as ONNX defines.
    const int64_t rank = static_cast<int64_t>(d.size());
    const int64_t begin = clamp_index(int_attr(n, "start", 0), rank),
                  end = clamp_index(int_attr(n, "end", rank), rank);
    for (int64_t k = begin; k < end; ++k) c.i.push_back(d[static_cast<size_t>(k)]);
    c.dims = {static_cast<int64_t>(c.i.size())};
    return define_constant(n, 0, c);
  }
  if (op == "Identity" || op == "Cast") {
    Constant c = constant(n, 0);
    if (op == "Cast") {
      const int64_t to = int_attr(n, "to", 0);
      if (to == onnx::TensorProto_DataType_FLOAT && c.type == onnx::TensorProto_DataType_INT64) {
        c.f.assign(c.i.begin(), c.i.end());
        c.i.clear();
      } else if (to == onnx::TensorProto_DataType_INT64 &&
                 c.type == onnx::TensorProto_DataType_FLOAT) {
        for (float f : c.f) {
          if (!(std::fabs(f) < 9.2e18f)) unsupported(n, "a cast to int64 of " + std::to_string(f));
          c.i.push_back(static_cast<int64_t>(f));
        }
        c.f.clear();
      } else if (to != c.type) {
        unsupported(n, "a cast of a constant to type " + std::to_string(to));
      }
      c.type = static_cast<int32_t>(to);
    }
    return define_constant(n, 0, c);
  }
  // The rest act on 1-D int64 constants (shapes and indices).
  auto ints = [&](int input) -> const Constant& {
    const Constant& c = constant(n, input);
    if (c.type != onnx::TensorProto_DataType_INT64 || c.dims.size() > 1) {
      unsupported(n, "remat folds this op on int64 scalars and vectors only (shape arithmetic)");
    }
    return c;
  };
  Constant out;
  out.type = onnx::TensorProto_DataType_INT64;
  if (op == "Gather") {
    const Constant& data = ints(0);
    const Constant& index = ints(1);
    if (int_attr(n, "axis", 0) != 0) unsupported(n, "a folded Gather takes axis 0");
    for (int64_t k : index.i) {
      const int64_t at = k < 0 ? k + data.numel() : k;
      if (at < 0 || at >= data.numel())
        unsupported(n, "index " + std::to_string(k) + " outside the data");
      out.i.push_back(data.i[static_cast<size_t>(at)]);
    }
    out.dims = index.dims;
  } else if (op == "Unsqueeze" || op == "Squeeze") {
    // A scalar to [1] and back (shape arithmetic); the axes must say so.
    out = ints(0);
    Dims axes;
    if (n.input_size() > 1 && !n.input(1).empty()) axes = int_constant(n, 1).i;
    const bool scalar_in = out.dims.empty();
    if (axes.size() > 1 ||
        (op == "Unsqueeze" && (!scalar_in || axes.empty() || (axes[0] != 0 && axes[0] != -1))) ||
        (op == "Squeeze" &&
         (out.dims != Dims{1} || (!axes.empty() && axes[0] != 0 && axes[0] != -1)))) {
      unsupported(n, "a folded " + op + " takes a scalar to [1] or back");
    }
    out.dims = op == "Unsqueeze" ? Dims{1} : Dims{};
  } else if (op == "Range") {
    for (int k = 0; k < 3; ++k) {
      if (ints(k).numel() != 1) unsupported(n, "Range takes three scalars");
    }
    const int64_t start = ints(0).i[0], limit = ints(1).i[0], delta = ints(2).i[0];
    if (delta == 0) unsupported(n, "a Range with delta 0");
    // max(ceil((limit - start) / delta), 0) values, computed without overflow.
    const __int128 span = static_cast<__int128>(limit) - start;
    __int128 count = span / delta + (span % delta != 0 && (span > 0) == (delta > 0) ? 1 : 0);
    if (count < 0) count = 0;
    if (count > kMaxFolded) unsupported(n, "a Range of more than 2^24 values");
    for (int64_t k = 0; k < static_cast<int64_t>(count); ++k)
      out.i.push_back(static_cast<int64_t>(start + static_cast<__int128>(k) * delta));
    out.dims = {static_cast<int64_t>(out.i.size())};
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    const Constant& a = ints(0);
    const Constant& b = ints(1);
    if ((a.numel() != b.numel() && a.numel() != 1 && b.numel() != 1) || a.numel() == 0 ||
        b.numel() == 0) {
      unsupported(n, "folded operands of other sizes, or empty");
    }
    const int64_t count = std::max(a.numel(), b.numel());
    for (int64_t k = 0; k < count; ++k) {
      const int64_t x = a.i[static_cast<size_t>(a.numel() == 1 ? 0 : k)],
                    y = b.i[static_cast<size_t>(b.numel() == 1 ? 0 : k)];
      if (op == "Div" && (y == 0 || (x == INT64_MIN && y == -1)))
        unsupported(n, "an integer division that overflows");
      int64_t v = 0;
      const bool overflow = op == "Add"   ? __builtin_add_overflow(x, y, &v)
                            : op == "Sub" ? __builtin_sub_overflow(x, y, &v)
                            : op == "Mul" ? __builtin_mul_overflow(x, y, &v)
                                          : (v = x / y, false);
      if (overflow) unsupported(n, "integer arithmetic that overflows 64 bits");
      out.i.push_back(v);
    }
    out.dims = a.numel() >= b.numel() ? a.dims : b.dims;
  } else if (op == "Concat") {
    for (int k = 0; k < n.input_size(); ++k) {
      const Constant& part = ints(k);
      out.i.insert(out.i.end(), part.i.begin(), part.i.end());
    }
    out.dims = {static_cast<int64_t>(out.i.size())};
  } else {
    unsupported(n, "remat does not fold this op on constants");
  }
  define_constant(n, 0, out);
}

}  // namespace compiler
}  // namespace remat
