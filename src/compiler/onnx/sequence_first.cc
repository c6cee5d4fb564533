// The ONNX importer's sequence-first values (onnx/importer.h): torch.nn.MultiheadAttention with
// batch_first transposes its [B, S, E] input to [S, B, E], works on rows (the in-projection,
// its three slices, the out-projection on [S * B, E]) and transposes back. A Transpose (1, 0, 2)
// of a computed 3-D value emits nothing: its output is held in the input's [B, S, E] order, the
// row-wise nodes keep it so, the fused attention reads it as it is (onnx/attention.cc), and the
// Transpose back is the held tensor again. A node that reads such a value any other way gets it
// permuted into the ONNX order, once, as every Transpose was before.
#include "compiler/onnx/importer.h"

namespace remat {
namespace compiler {

bool OnnxImporter::swapped(const std::string& name, Swapped* out) const {
  const auto it = swapped_.find(name);
  if (it == swapped_.end()) return false;
  *out = it->second;
  return true;
}

void OnnxImporter::define_swapped(const onnx::NodeProto& n, int output, int held, int64_t s,
                                  const Dims& dims) {
  const std::string& name = n.output(output);
  swapped_[name] = Swapped{held, s};
  logical_[name] = dims;
}

int OnnxImporter::unswap(const std::string& name) {
  const Swapped& rows = swapped_.at(name);
  Dims view = out_.graph.tensors[rows.held].shape;
  const int64_t b = view[0];
  view = {b, rows.s, product(view, 2)};
  const int t = b_.permute(rows.held, view, {1, 0, 2}, logical_.at(name),
                           out_.graph.unique_name(name + ".sequence_first"));
  tensors_[name] = t;
  logical_.erase(name);
  return t;
}

void OnnxImporter::define_rows(const onnx::NodeProto& n, int output, int t, const Swapped& rows,
                               const Dims& dims) {
  if (rows.held < 0) return define(n, output, t);
  define_swapped(n, output, t, rows.s, dims);
}

int OnnxImporter::rows_of(const onnx::NodeProto& n, int input, Swapped* rows) {
  if (input < n.input_size() && swapped(n.input(input), rows)) return rows->held;
  *rows = Swapped{};
  return tensor(n, input);
}

int OnnxImporter::batch_first(const onnx::NodeProto& n) {
  const std::string& name = n.input(0);
  const Dims d = shape_of(name);
  Swapped rows;
  if (swapped(name, &rows) && d.size() == 3 && rows.s == d[0]) return rows.held;
  // Sequence-first from the start (batch_first=False): one permute.
  return b_.permute(tensor(n, 0), d, {1, 0, 2}, {d[1], d[0], d[2]},
                    out_.graph.unique_name(name + ".batch_first"));
}

}  // namespace compiler
}  // namespace remat
