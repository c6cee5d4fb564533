// The ONNX importer's constants (onnx/importer.h): initializers and Constant nodes decoded
// (their folding is onnx/folding.cc).
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

}  // namespace compiler
}  // namespace remat
