// Private to the compiler's ONNX import (onnx/import.h): the importer class, whose members
// are defined across onnx/import.cc, onnx/constants.cc, onnx/layers.cc, onnx/elementwise.cc,
// onnx/masks.cc, onnx/sequence_first.cc, onnx/patterns.cc and onnx/attention.cc, and what they
// share. Needs Debian's libonnx
// (ONNX_NAMESPACE=onnx, ONNX_ML=1).
#ifndef REMAT_COMPILER_ONNX_IMPORTER_H_
#define REMAT_COMPILER_ONNX_IMPORTER_H_

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/builder.h"
#include "compiler/onnx/import.h"

namespace remat {
namespace compiler {

/// Dims of an ONNX value, outermost first.
using Dims = std::vector<int64_t>;

/// Most elements of one constant or initializer (16 GiB of floats).
constexpr int64_t kMaxConstantElements = int64_t{1} << 32;
/// Most elements of a folded constant (onnx/folding.cc), and the largest dim, stride, pad or size
/// an attribute or a shape constant may give: far past any real model, and far from int64 overflow
/// in products.
constexpr int64_t kMaxFolded = int64_t{1} << 24;
constexpr int kMaxDimLog2 = 31;
constexpr int64_t kMaxDim = int64_t{1} << kMaxDimLog2;

/// |d| as "[a, b, ...]" for messages.
inline std::string dims_text(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

/// The product of d[from:to].
inline int64_t product(const Dims& d, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t n = 1;
  for (size_t i = from; i < d.size() && i < to; ++i) n *= d[i];
  return n;
}

/// |v| as an index into |size| elements, clamped to [0, size] as ONNX clamps Slice and Shape
/// bounds (a negative one counts from the end).
inline int64_t clamp_index(int64_t v, int64_t size) {
  return v < 0 ? std::max<int64_t>(0, v + size) : std::min(v, size);
}

/// A value known when compiling: an initializer, a Constant, or shape arithmetic on them.
struct Constant {
  int32_t type = 0;  // onnx::TensorProto_DataType
  Dims dims;
  std::vector<float> f;     // FLOAT
  std::vector<int64_t> i;   // INT64 and INT32, widened
  std::string initializer;  // the initializer's name, when it is one
  int64_t numel() const { return product(dims); }
};

/// ONNX's multidirectional broadcast of |a| and |b| into |out|; false when they do not broadcast
/// (onnx/elementwise.cc).
bool broadcast_shape(const Dims& a, const Dims& b, Dims* out);

/// Whether every element of constant |c| is one number (a float's bits, or an integer); that
/// number in |value| (a float constant's).
inline bool one_number(const Constant& c, float* value = nullptr) {
  if (c.f.empty() && c.i.empty()) return false;
  if (c.type == onnx::TensorProto_DataType_FLOAT) {
    for (float v : c.f) {
      if (std::memcmp(&v, &c.f[0], sizeof v) != 0) return false;
    }
    if (value != nullptr) *value = c.f[0];
    return true;
  }
  return std::all_of(c.i.begin(), c.i.end(), [&](int64_t v) { return v == c.i[0]; });
}

/// The elements of |t|, named |what| in messages (raw_data or the typed field); throws for other
/// types, external data and a field whose element count is not the dims' (checked before
/// anything is allocated).
Constant decode(const onnx::TensorProto& t, const std::string& what);

/// The nodes of one multi-head attention as torch exports it (onnx/attention.cc): found by
/// their op types and wiring alone, before any node is imported; its shapes and constants are
/// checked when its last node is reached.
struct AttentionMatch {
  const onnx::NodeProto* reshape[3] = {};      // q, k, v [B, S, H] -> [B, S, heads, D]
  const onnx::NodeProto* heads[3] = {};        // Transpose (0, 2, 1, 3); k's (0, 2, 3, 1)
  const onnx::NodeProto* k_swap = nullptr;     // k's second Transpose (0, 1, 3, 2), when split so
  std::vector<const onnx::NodeProto*> scales;  // Mul or Div by a number, on q, k or the scores
  const onnx::NodeProto* scores = nullptr;     // MatMul(q, k^T)
  const onnx::NodeProto* mask = nullptr;       // Add of the mask
  const onnx::NodeProto* softmax = nullptr;    // Softmax
  const onnx::NodeProto* dropout = nullptr;    // Dropout of the probabilities
  const onnx::NodeProto* context = nullptr;    // MatMul(probs, v)
  const onnx::NodeProto* merge = nullptr;      // Transpose (0, 2, 1, 3)
  const onnx::NodeProto* out = nullptr;        // Reshape [B, S, heads * Dv]
  int mask_input = -1;                         // which input of |mask| is the mask
  // torch.nn.MultiheadAttention's layout: q, k, v [S, B, H] reshaped to [S, B * heads, D] and
  // transposed (1, 0, 2) (k: (1, 2, 0)), the context transposed (1, 0, 2) and reshaped to
  // [S * B, H]; else the [B, S, heads, D] split above.
  bool sequence_first = false;
  std::vector<int> nodes;  // the indices of all of the above, ascending
};

/// A value held with its first two axes swapped (onnx/sequence_first.cc): ONNX gives it [S, B,
/// rest...] or [S * B, rest...], the tensor |held| holds [B, S, rest...].
struct Swapped {
  int held = -1;
  int64_t s = 0;
};

/// A boolean value (onnx/masks.cc): a BOOL graph input (an i32 tensor of 0s and 1s), or a view of
/// one (Reshape, Unsqueeze, Squeeze, Flatten, Expand, Cast to BOOL, Not), kept as the input and
/// the views, replayed on the floats a Where (or a Cast to FLOAT) picks by it.
struct BoolValue {
  int source = -1;                           // the i32 tensor
  std::vector<std::pair<bool, Dims>> steps;  // (expand?, dims): a reshape to, or an expand to
  Dims dims;                                 // the ONNX shape after the steps
  bool negated = false;                      // an odd number of Not
};

/// Imports one graph, node by node in the file's (topological) order: values and messages in
/// onnx/import.cc, constants in onnx/constants.cc, their folding in onnx/folding.cc, layers in
/// onnx/layers.cc, multi-node patterns in onnx/patterns.cc.
class OnnxImporter {
 public:
  OnnxImporter(const onnx::ModelProto& model, const std::string& path, int64_t batch, int64_t opset,
               AttentionKernel attention)
      : model_(model),
        path_(path),
        batch_(batch),
        opset_(opset),
        attention_(attention),
        b_(&out_.graph) {}

  OnnxImport run(OnnxLoss loss);

 private:
  // ---- values ------------------------------------------------------------------------------
  bool is_constant(const std::string& name) const { return constants_.count(name) != 0; }
  const Constant& constant(const onnx::NodeProto& n, int input) const;
  // Input |input| of |n| as an int64 constant (shapes, axes, indices, sizes).
  const Constant& int_constant(const onnx::NodeProto& n, int input) const;
  // Refuses |values| (named |what|) outside [lo, 2^|hi_log2|]: kMaxDim, or a spatial op's
  // strides, pads, dilations and kernels, kMaxSpatialAttr (plan/spatial_shape.h).
  void bounded(const onnx::NodeProto& n, const Dims& values, int64_t lo, const char* what,
               int hi_log2 = kMaxDimLog2) const;
  int tensor(const onnx::NodeProto& n, int input);
  Dims shape_of(const std::string& name) const;
  // A parameter (or state) tensor from initializer |c| of |n|'s input |input|, made once.
  int adopt(const onnx::NodeProto& n, int input, Role role);
  // The same for initializer |name| (a transposed weight's).
  int adopt_named(const onnx::NodeProto& n, const std::string& name, Role role);
  // A tensor named |name| that the plan carries with |bytes| as its initial value (Init::kData).
  int carried(const std::string& name, remat_dtype dtype, const Dims& dims, Role role,
              const void* bytes, size_t size);
  // |n|'s output 0 as the same tensor as its input 0 under another name (Identity, Cast).
  void alias(const onnx::NodeProto& n);
  // A fresh activation of |shape| named after |hint|.
  int fresh(const std::string& hint, const Dims& shape, remat_dtype dtype = REMAT_DTYPE_F32);
  // alpha * x (a scale op) into a fresh activation named after |hint|.
  int scaled(int x, float alpha, const std::string& hint);
  // Whether input |input| of |n| is a float scalar constant; its value in |value|.
  bool scalar(const onnx::NodeProto& n, int input, float* value) const;
  void define(const onnx::NodeProto& n, int output, int tensor, Dims logical = {});
  void define_constant(const onnx::NodeProto& n, int output, Constant c);

  // ---- nodes -------------------------------------------------------------------------------
  void node(const onnx::NodeProto& n);
  void import_node(const onnx::NodeProto& n);
  void fold(const onnx::NodeProto& n);
  void gemm(const onnx::NodeProto& n);
  void matmul(const onnx::NodeProto& n);
  // MatMul |n| of a weight and the one node reading it, an Add of a float initializer [|columns|]
  // (nn.Linear on more than 2 dims, as torch exports it): a matmul with that bias, defining the
  // Add's output. Returns false, importing nothing, where the pattern does not hold.
  // |rows|: x is held sequence-first (onnx/sequence_first.cc); the result is held so too.
  bool linear_with_bias(const onnx::NodeProto& n, int x, int w, bool trans_b, const Dims& out,
                        const Swapped& rows);
  void conv(const onnx::NodeProto& n);
  void batch_norm(const onnx::NodeProto& n);
  void pool(const onnx::NodeProto& n);
  // |n|'s input 0 as |target| (same element count): the same tensor, or a copy of another shape.
  void view_as(const onnx::NodeProto& n, const Dims& target);
  void reshape(const onnx::NodeProto& n);
  void squeeze(const onnx::NodeProto& n);
  void concat(const onnx::NodeProto& n);
  void pad(const onnx::NodeProto& n);
  void dropout(const onnx::NodeProto& n);
  void cross_entropy_loss(const onnx::NodeProto& n);
  void transpose(const onnx::NodeProto& n);
  void gather(const onnx::NodeProto& n);
  // Add, Sub, Mul, Div with ONNX's broadcasting (onnx/elementwise.cc).
  void arithmetic(const onnx::NodeProto& n);
  // Pow by a number, Sqrt, LeakyRelu, Erf, Clip, HardSigmoid, HardSwish, LogSoftmax, Cast.
  void math(const onnx::NodeProto& n);
  // ReduceSum and ReduceMean (the decomposed LayerNorm first).
  void reduce(const onnx::NodeProto& n);
  // Input |input| of |n| as a graph tensor: a computed tensor; a parameter where |trainable|
  // and it is a float initializer with dims; else a constant the plan carries (made once).
  int operand(const onnx::NodeProto& n, int input, bool trainable);
  // |x| repeated to |target| (ONNX broadcasting: fewer dims, or 1s) with broadcast ops.
  int expand(int x, const Dims& target, const std::string& hint);
  bool gelu(const onnx::NodeProto& n);
  // The nodes of torch's multi-head attention around each Softmax (onnx/attention.cc), found
  // before any node is imported: its head split reaches the file before k and v exist.
  void find_attention();
  // Imports the attention whose last node is |n|: one attention op where its shapes and
  // constants hold, else each of its nodes as they would be imported alone.
  void attention(const onnx::NodeProto& n);
  // The pattern's import as one attention op; false, importing nothing, where it does not hold.
  bool fused_attention(const AttentionMatch& m);
  // Whether the ONNX nodes that make the mask |name| [B * heads, Sq or 1, Sk] show it alike
  // across heads (torch's key padding mask, expanded over the heads).
  bool alike_across_heads(const std::string& name, int64_t batch, int64_t heads) const;
  // The held [B, S, H] tensor of |n|'s input 0, a sequence-first value [S, B, H] (permuted once
  // where it is not held so).
  int batch_first(const onnx::NodeProto& n);
  bool decomposed_layer_norm(const onnx::NodeProto& n);
  void layer_norm(const onnx::NodeProto& n);
  void split(const onnx::NodeProto& n);
  void slice(const onnx::NodeProto& n);
  // Expand of a computed float tensor (ONNX broadcasting to the constant shape).
  void expand_node(const onnx::NodeProto& n);
  // The one node that reads value |name| (nullptr: none or several, or the graph's output).
  const onnx::NodeProto* sole_reader(const std::string& name) const;
  // The node that writes value |name|, or nullptr (an input, an initializer).
  const onnx::NodeProto* producer_of(const std::string& name) const;
  // Whether value |name| is read for its shape alone: by Shape or Size nodes, or by a Transpose
  // whose output is (a dynamic-batch export reads the attention's k that way).
  bool shape_only(const std::string& name) const;
  // sole_reader(), not counting a Transpose read for its shape alone where |name| is a Reshape's
  // output (an attention's head split).
  const onnx::NodeProto* sole_value_reader(const std::string& name) const;
  // A Transpose read for its shape alone whose input is a held-back attention's head split:
  // its output's shape, without a tensor.
  void shape_of_transpose(const onnx::NodeProto& n);
  void attach_loss(OnnxLoss loss);

  // ---- booleans (onnx/masks.cc) --------------------------------------------------------------
  // A view of a boolean value (Reshape, Unsqueeze, Squeeze, Flatten, Expand, Cast to BOOL,
  // Identity, Not) as a boolean value with the step added; |dims| its ONNX shape.
  void boolean_view(const onnx::NodeProto& n, const Dims& dims, bool expand, bool negate);
  // Where(c, a, b) of a boolean c and float numbers a and b, and Cast of a boolean to FLOAT: a
  // lookup of a two-row table by c, with c's views replayed on the floats.
  void where(const onnx::NodeProto& n);
  bool is_boolean(const std::string& name) const { return booleans_.count(name) != 0; }

  // ---- sequence-first values (onnx/sequence_first.cc) ----------------------------------------
  // Whether value |name| is held swapped; its holding in |out|.
  bool swapped(const std::string& name, Swapped* out) const;
  // Output |output| of |n|, ONNX shape |dims|, as held by |held| with the first two axes
  // swapped (|s| the ONNX leading dim).
  void define_swapped(const onnx::NodeProto& n, int output, int held, int64_t s, const Dims& dims);
  // The permute of a swapped value into its ONNX order, made once (tensor() calls it).
  int unswap(const std::string& name);
  // Defines output |output| of |n| from |t|, a row-wise result of a swapped input |rows| (s
  // 0: not swapped) with ONNX shape |dims|.
  void define_rows(const onnx::NodeProto& n, int output, int t, const Swapped& rows,
                   const Dims& dims);
  // Input |input| of |n| for a node that works on its rows alone: the held tensor where it is
  // swapped (|rows| says so), else tensor().
  int rows_of(const onnx::NodeProto& n, int input, Swapped* rows);

  // ---- attributes and messages -------------------------------------------------------------
  const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const char* name) const;
  int64_t int_attr(const onnx::NodeProto& n, const char* name, int64_t fallback) const;
  float float_attr(const onnx::NodeProto& n, const char* name, float fallback) const;
  Dims ints_attr(const onnx::NodeProto& n, const char* name, Dims fallback) const;
  std::string name_of(const onnx::NodeProto& n) const;
  [[noreturn]] void unsupported(const onnx::NodeProto& n, const std::string& why) const;

  const onnx::ModelProto& model_;
  std::string path_;
  int64_t batch_, opset_;
  AttentionKernel attention_;
  OnnxImport out_;
  Builder b_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, int> tensors_;             // ONNX value -> graph tensor
  std::map<std::string, Dims> logical_;            // ONNX shape where it differs from the tensor's
  std::map<std::string, int> adopted_;             // initializer -> graph tensor
  std::map<std::string, int> constant_tensors_;    // constant value -> the plan's copy of it
  std::map<std::string, std::string> transposed_;  // value -> the 2-D initializer it transposes
  std::map<std::string, std::vector<int>> readers_;    // value -> the nodes that read it
  std::map<std::string, int> producers_;               // value -> the node that writes it
  std::set<const onnx::NodeProto*> done_;              // nodes a pattern already imported
  std::vector<AttentionMatch> attentions_;             // found by find_attention()
  std::map<const onnx::NodeProto*, size_t> deferred_;  // a node of attentions_[i], held back
  std::map<std::string, BoolValue> booleans_;          // boolean values (onnx/masks.cc)
  std::map<std::string, Swapped> swapped_;  // values held sequence-first (onnx/sequence_first.cc)
};

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_ONNX_IMPORTER_H_
