// The ONNX importer's boolean values (onnx/importer.h): a BOOL graph input, such as
// nn.TransformerEncoder's src_key_padding_mask, binds as an i32 tensor of 0s and 1s. torch's
// export reshapes and expands it over the heads and turns it into an additive mask with
// Where(mask, -inf, 0). remat keeps the views of a boolean as steps (no op) and imports the
// Where as an embedding lookup of a two-row table [[b], [a]] by the 0/1 ids (exact, any numbers,
// -inf included), then replays the views on the floats.
#include <algorithm>
#include <cmath>

#include "compiler/onnx/importer.h"

namespace remat {
namespace compiler {

void OnnxImporter::boolean_view(const onnx::NodeProto& n, const Dims& dims, bool expand,
                                bool negate) {
  BoolValue v = booleans_.at(n.input(0));
  if (dims != v.dims) v.steps.emplace_back(expand, dims);
  v.dims = dims;
  v.negated = v.negated != negate;
  booleans_[n.output(0)] = v;
}

void OnnxImporter::where(const onnx::NodeProto& n) {
  const bool cast = n.op_type() == "Cast";
  if (!is_boolean(n.input(0))) {
    unsupported(n,
                "Where's condition must be a BOOL graph input or a view of one (remat "
                "computes no booleans)");
  }
  float a = 1.0f, b = 0.0f;  // a Cast to FLOAT picks 1 or 0
  Dims out = booleans_.at(n.input(0)).dims;
  // Where(c, inf, Y) of a constant tensor Y is Y + (c ? inf : 0) exactly (Y holding neither NaN
  // nor the other infinity), and Where(c, Y, inf) likewise: torch's masked_fill of a float mask
  // by a boolean one (a causal mask with a key padding mask). |added|: Y's input, else 0.
  int added = 0;
  if (!cast) {
    if (n.input_size() != 3 || !is_constant(n.input(1)) || !is_constant(n.input(2))) {
      unsupported(n, "Where of a boolean picks between two float constants");
    }
    const bool number_a = constant(n, 1).type == onnx::TensorProto_DataType_FLOAT &&
                          one_number(constant(n, 1), &a),
               number_b = constant(n, 2).type == onnx::TensorProto_DataType_FLOAT &&
                          one_number(constant(n, 2), &b);
    for (int side = 1; side <= 2 && !(number_a && number_b); ++side) {
      const float inf = side == 1 ? a : b;
      const Constant& y = constant(n, 3 - side);
      if (!(side == 1 ? number_a : number_b) || !std::isinf(inf) ||
          y.type != onnx::TensorProto_DataType_FLOAT)
        continue;
      const bool adds = std::none_of(y.f.begin(), y.f.end(), [&](float v) {
        return std::isnan(v) || (std::isinf(v) && (v > 0) != (inf > 0));
      });
      if (!adds) continue;
      added = 3 - side;
      (side == 1 ? b : a) = 0.0f;  // the lookup adds nothing where Y is picked
    }
    if (!(number_a && number_b) && added == 0) {
      unsupported(n,
                  "Where of a boolean picks between two float constants, each one number "
                  "throughout, or an infinity and a constant tensor without NaN or the other "
                  "infinity");
    }
    Dims with_a, with_both;
    if (!broadcast_shape(out, constant(n, 1).dims, &with_a) ||
        !broadcast_shape(with_a, constant(n, 2).dims, &with_both)) {
      unsupported(n, "its inputs do not broadcast");
    }
    out = with_both;
  }
  const BoolValue& c = booleans_.at(n.input(0));
  const std::string name = out_.graph.unique_name(n.output(0));
  // Row 0 is picked where the condition holds 0, row 1 where it holds 1.
  const float rows[2] = {c.negated ? a : b, c.negated ? b : a};
  const int table = carried(out_.graph.unique_name(name + ".table"), REMAT_DTYPE_F32, {2, 1},
                            Role::kState, rows, sizeof(rows));
  int t = b_.embedding(c.source, table, name);
  Dims cur = out_.graph.tensors[c.source].shape;
  auto as_shaped = [&](int x, const Dims& dims) {
    if (out_.graph.tensors[x].shape == dims) return x;
    const int y = fresh(name + ".view", dims);
    out_.graph.add_op(OpCode::kCopy, {x}, {y});
    return y;
  };
  std::vector<std::pair<bool, Dims>> steps = c.steps;
  if (out != c.dims) steps.emplace_back(true, out);  // broadcast to a or b's rank
  for (const auto& step : steps) {
    if (step.first) t = expand(as_shaped(t, cur), step.second, name + ".expanded");
    cur = step.second;
  }
  if (added != 0) {  // + Y, broadcast as ONNX does
    const int lookup = expand(as_shaped(t, cur), out, name + ".expanded");
    const int y = expand(operand(n, added, false), out, name + ".expanded");
    return define(n, 0, b_.add(as_shaped(lookup, out), as_shaped(y, out), name));
  }
  define(n, 0, t, out_.graph.tensors[t].shape == cur ? Dims{} : cur);
}

void OnnxImporter::expand_node(const onnx::NodeProto& n) {
  const Dims d = shape_of(n.input(0));
  const Constant& shape = int_constant(n, 1);
  bounded(n, shape.i, 1, "target dim");
  Dims out;
  if (!broadcast_shape(d, shape.i, &out))
    unsupported(n, "shape " + dims_text(shape.i) + " does not broadcast the input");
  if (is_boolean(n.input(0))) return boolean_view(n, out, true, false);
  const int x = tensor(n, 0);
  if (out_.graph.tensors[x].dtype == REMAT_DTYPE_I32)
    unsupported(n, "Expand of integers (remat expands floats and booleans)");
  define(n, 0, expand(x, out, out_.graph.unique_name(n.output(0))));
}

}  // namespace compiler
}  // namespace remat
