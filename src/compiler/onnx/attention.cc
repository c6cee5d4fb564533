// The ONNX importer's multi-head attention (onnx/importer.h, docs/onnx.md): the nodes torch
// exports for softmax(q k^T * scale + mask) v over heads split by Reshape and Transpose, found
// before the import and imported as one attention op (--attention fused) on the [B, S, H]
// tensors, with no permute; torch.nn.MultiheadAttention's sequence-first form of it likewise,
// on the tensors onnx/sequence_first.cc holds batch-first. Anything that does not hold falls back
// to the node-by-node import.
#include <cmath>

#include "compiler/onnx/importer.h"

namespace remat {
namespace compiler {
namespace {

bool is_perm(const onnx::NodeProto* n, const Dims& perm) {
  if (n == nullptr || n->op_type() != "Transpose") return false;
  for (const onnx::AttributeProto& a : n->attribute()) {
    if (a.name() == "perm") return Dims(a.ints().begin(), a.ints().end()) == perm;
  }
  return false;
}

// ONNX Reshape's target |t| (0 copies the input's dim, one -1 is inferred) for an input of
// |in|; false where it is malformed or holds another element count.
bool reshape_target(const Constant& t, const Dims& in, Dims* out) {
  if (t.type != onnx::TensorProto_DataType_INT64) return false;
  *out = t.i;
  int64_t known = 1;
  int infer = -1;
  for (size_t k = 0; k < out->size(); ++k) {
    int64_t& d = (*out)[k];
    if (d == 0) {
      if (k >= in.size()) return false;
      d = in[k];
    }
    if (d == -1) {
      if (infer >= 0) return false;
      infer = static_cast<int>(k);
    } else if (d < 1 || d > kMaxDim || __builtin_mul_overflow(known, d, &known)) {
      return false;
    }
  }
  if (infer >= 0) {
    if (known == 0 || product(in) % known != 0) return false;
    (*out)[static_cast<size_t>(infer)] = product(in) / known;
  }
  return product(*out) == product(in);
}

}  // namespace

bool OnnxImporter::shape_only(const std::string& value) const {
  const auto it = readers_.find(value);
  if (it == readers_.end()) return false;
  for (const onnx::ValueInfoProto& out : model_.graph().output()) {
    if (out.name() == value) return false;
  }
  for (int k : it->second) {
    const onnx::NodeProto& r = model_.graph().node(k);
    if (r.op_type() == "Shape" || r.op_type() == "Size") continue;
    if (r.op_type() != "Transpose" || r.output_size() != 1 || !shape_only(r.output(0)))
      return false;
  }
  return true;
}

const onnx::NodeProto* OnnxImporter::sole_value_reader(const std::string& name) const {
  const auto it = readers_.find(name);
  if (it == readers_.end()) return nullptr;
  // Of a head split Reshape's output, a Transpose read for its shape alone is no reader:
  // shape_of_transpose() gives its shape from the Reshape's target (folded by then) while the
  // Reshape is held back. Any other reader, a Shape of the value itself included, is one.
  const onnx::NodeProto* producer = producer_of(name);
  const bool split =
      producer != nullptr && producer->op_type() == "Reshape" && producer->input_size() == 2;
  const onnx::NodeProto* found = nullptr;
  for (int k : it->second) {
    const onnx::NodeProto& r = model_.graph().node(k);
    if (split && r.op_type() == "Transpose" && r.output_size() == 1 && shape_only(r.output(0)))
      continue;
    if (found != nullptr) return nullptr;
    found = &r;
  }
  for (const onnx::ValueInfoProto& out : model_.graph().output()) {
    if (out.name() == name) return nullptr;  // the graph's output is read outside too
  }
  return found;
}

void OnnxImporter::shape_of_transpose(const onnx::NodeProto& n) {
  // Its input: a held-back head split Reshape's output, shaped by its constant target.
  const onnx::NodeProto* reshape = producer_of(n.input(0));
  Dims in;
  if (reshape == nullptr || reshape->op_type() != "Reshape" || !is_constant(reshape->input(1)) ||
      !reshape_target(constants_.at(reshape->input(1)), shape_of(reshape->input(0)), &in)) {
    unsupported(n, "input '" + n.input(0) + "' is produced by no node before it");
  }
  Dims perm = ints_attr(n, "perm", {});
  if (perm.empty()) {
    for (size_t k = in.size(); k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  }
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()))
      unsupported(n, "perm entry " + std::to_string(p));
    out.push_back(in[static_cast<size_t>(p)]);
  }
  logical_[n.output(0)] = out;  // no tensor: only Shape reads it
}

void OnnxImporter::find_attention() {
  const onnx::GraphProto& g = model_.graph();
  std::map<const onnx::NodeProto*, int> index;
  for (int k = 0; k < g.node_size(); ++k) index[&g.node(k)] = k;
  // The node writing |value| where |reader| is its only reader, else nullptr.
  auto from = [&](const std::string& value, const onnx::NodeProto* reader) {
    return sole_value_reader(value) != reader ? nullptr : producer_of(value);
  };
  // Back from |value| over Mul and Div by what may be a number (checked at import), added to
  // |scales|: the first other node.
  auto skip_scales = [&](std::string value, const onnx::NodeProto* reader,
                         std::vector<const onnx::NodeProto*>* scales) {
    for (;;) {
      const onnx::NodeProto* p = from(value, reader);
      if (p == nullptr || (p->op_type() != "Mul" && p->op_type() != "Div") ||
          p->input_size() != 2) {
        return p;
      }
      scales->push_back(p);
      value = p->op_type() == "Mul" && is_constant(p->input(0)) ? p->input(1) : p->input(0);
      reader = p;
    }
  };
  // The head split Reshape -> Transpose (0, 2, 1, 3) ending at |t|; k's may be (0, 2, 3, 1). In
  // torch.nn.MultiheadAttention's layout, (1, 0, 2), k's (1, 2, 0).
  auto split = [&](const onnx::NodeProto* t, AttentionMatch* m, int which) {
    const bool plain = m->sequence_first
                           ? is_perm(t, {1, 0, 2}) || (which == 1 && is_perm(t, {1, 2, 0}))
                           : is_perm(t, {0, 2, 1, 3}) || (which == 1 && is_perm(t, {0, 2, 3, 1}));
    if (!plain) return false;
    const onnx::NodeProto* r = from(t->input(0), t);
    if (r == nullptr || r->op_type() != "Reshape" || r->input_size() != 2) return false;
    m->heads[which] = t;
    m->reshape[which] = r;
    return true;
  };
  for (const onnx::NodeProto& s : g.node()) {
    if (s.op_type() != "Softmax" || (!s.domain().empty() && s.domain() != "ai.onnx")) continue;
    AttentionMatch m;
    m.softmax = &s;
    const onnx::NodeProto* p = skip_scales(s.input(0), &s, &m.scales);
    if (p != nullptr && p->op_type() == "Add" && p->input_size() == 2) {
      if (!m.scales.empty()) continue;  // a scale after the mask would scale the mask too
      for (int side = 0; side < 2 && m.scores == nullptr; ++side) {
        std::vector<const onnx::NodeProto*> scales;
        const onnx::NodeProto* q = skip_scales(p->input(side), p, &scales);
        if (q != nullptr && q->op_type() == "MatMul") {
          m.scores = q;
          m.mask = p;
          m.mask_input = 1 - side;
          m.scales.insert(m.scales.end(), scales.begin(), scales.end());
        }
      }
    } else if (p != nullptr && p->op_type() == "MatMul") {
      m.scores = p;
    }
    if (m.scores == nullptr) continue;
    const onnx::NodeProto* qt = skip_scales(m.scores->input(0), m.scores, &m.scales);
    m.sequence_first = is_perm(qt, {1, 0, 2});
    if (!split(qt, &m, 0)) continue;
    const onnx::NodeProto* kt = skip_scales(m.scores->input(1), m.scores, &m.scales);
    const Dims swap = m.sequence_first ? Dims{0, 2, 1} : Dims{0, 1, 3, 2};
    const Dims head = m.sequence_first ? Dims{1, 0, 2} : Dims{0, 2, 1, 3};
    if (is_perm(kt, swap)) {
      m.k_swap = kt;
      kt = from(kt->input(0), kt);
      if (!is_perm(kt, head)) continue;
    } else if (!is_perm(kt, m.sequence_first ? Dims{1, 2, 0} : Dims{0, 2, 3, 1})) {
      continue;
    }
    if (!split(kt, &m, 1)) continue;
    std::string probs = s.output(0);
    const onnx::NodeProto* r = sole_value_reader(probs);
    if (r != nullptr && r->op_type() == "Dropout") {
      if (r->output_size() > 1 && !r->output(1).empty() && readers_.count(r->output(1)) != 0)
        continue;
      m.dropout = r;
      probs = r->output(0);
      r = sole_value_reader(probs);
    }
    if (r == nullptr || r->op_type() != "MatMul" || r->input(0) != probs || r->input(1) == probs ||
        !split(from(r->input(1), r), &m, 2)) {
      continue;
    }
    m.context = r;
    m.merge = sole_value_reader(r->output(0));
    if (!is_perm(m.merge, head)) continue;
    m.out = sole_value_reader(m.merge->output(0));
    if (m.out == nullptr || m.out->op_type() != "Reshape" || m.out->input(0) != m.merge->output(0))
      continue;
    std::vector<const onnx::NodeProto*> nodes = {m.scores, m.softmax, m.context, m.merge,
                                                 m.out,    m.k_swap,  m.mask,    m.dropout};
    nodes.insert(nodes.end(), std::begin(m.reshape), std::end(m.reshape));
    nodes.insert(nodes.end(), std::begin(m.heads), std::end(m.heads));
    nodes.insert(nodes.end(), m.scales.begin(), m.scales.end());
    bool taken = false;
    for (const onnx::NodeProto* n : nodes) {
      if (n == nullptr) continue;
      taken |= deferred_.count(n) != 0;
      m.nodes.push_back(index.at(n));
    }
    std::sort(m.nodes.begin(), m.nodes.end());
    if (taken || std::adjacent_find(m.nodes.begin(), m.nodes.end()) != m.nodes.end()) continue;
    for (int k : m.nodes) deferred_[&g.node(k)] = attentions_.size();
    attentions_.push_back(m);
  }
}

bool OnnxImporter::alike_across_heads(const std::string& name, int64_t batch, int64_t heads) const {
  // Back over elementwise nodes (numbers, Where, Cast, Not; constants alike across heads) to the
  // Reshape [B, heads, ...] -> [B * heads, ...], then on to an Expand whose input has 1 (or
  // nothing) on the heads axis.
  // The input of elementwise node |n| that is not a constant, or "" where it is none or several,
  // or where a constant could differ between heads: one that is not one number throughout and
  // whose dims (aligned to the node's output, as ONNX broadcasts) reach axis |heads_axis|.
  auto through = [&](const onnx::NodeProto& n, size_t heads_axis) -> std::string {
    const std::string& op = n.op_type();
    if (op != "Mul" && op != "Div" && op != "Add" && op != "Sub" && op != "Where" && op != "Cast" &&
        op != "Not") {
      return "";
    }
    std::string found;
    for (const std::string& in : n.input()) {
      if (in.empty()) continue;
      if (is_constant(in)) {
        const Constant& c = constants_.at(in);
        const size_t rank = shape_of(n.output(0)).size();
        const bool reaches =
            c.dims.size() + heads_axis >= rank && c.dims[c.dims.size() + heads_axis - rank] != 1;
        if (reaches && !one_number(c)) return "";
        continue;
      }
      if (!found.empty()) return "";
      found = in;
    }
    return found;
  };
  std::string value = name;
  const onnx::NodeProto* n = producer_of(value);
  while (n != nullptr && n->op_type() != "Reshape") {
    value = through(*n, 0);  // [B * heads, ...]
    n = value.empty() ? nullptr : producer_of(value);
  }
  if (n == nullptr) return false;
  const Dims before = shape_of(n->input(0));
  if (before.size() < 3 || before[0] != batch || before[1] != heads) return false;
  value = n->input(0);
  n = producer_of(value);
  while (n != nullptr && n->op_type() != "Expand") {
    value = through(*n, 1);  // [B, heads, ...]
    n = value.empty() ? nullptr : producer_of(value);
  }
  if (n == nullptr) return false;
  const Dims expanded = shape_of(n->input(0));
  const size_t rank = before.size();
  // The heads axis of the Expand's input, as ONNX aligns trailing dims: absent or 1.
  return expanded.size() < rank - 1 || expanded[expanded.size() - (rank - 1)] == 1;
}

void OnnxImporter::attention(const onnx::NodeProto& n) {
  const AttentionMatch& m = attentions_[deferred_.at(&n)];
  for (int k : m.nodes) deferred_.erase(&model_.graph().node(k));
  if (fused_attention(m)) return;
  for (int k : m.nodes) node(model_.graph().node(k));  // as today's import
}

bool OnnxImporter::fused_attention(const AttentionMatch& m) {
  // q, k, v: computed [B, S, heads * D], split as [B, S, heads, D]; sequence-first, [S, B, heads
  // * D] split as [S, B * heads, D] (B and S read swapped below).
  const bool seq = m.sequence_first;
  int64_t heads = 0;
  Dims in[3], split[3];
  for (int w = 0; w < 3; ++w) {
    const std::string& name = m.reshape[w]->input(0);
    in[w] = shape_of(name);
    Swapped rows;
    const bool computed = tensors_.count(name) != 0 || swapped(name, &rows);
    const int t = tensors_.count(name) != 0 ? tensors_.at(name) : rows.held;
    if (!computed || is_constant(name) || in[w].size() != 3 ||
        int_attr(*m.reshape[w], "allowzero", 0) != 0 || !is_constant(m.reshape[w]->input(1)) ||
        !reshape_target(constants_.at(m.reshape[w]->input(1)), in[w], &split[w]) ||
        out_.graph.tensors[t].dtype != REMAT_DTYPE_F32) {
      return false;
    }
    if (seq) {
      // [S, B * heads, D] -> the [B, S, heads, D] of the other layout.
      if (split[w].size() != 3 || split[w][0] != in[w][0] || split[w][1] % in[w][1] != 0)
        return false;
      std::swap(in[w][0], in[w][1]);
      split[w] = {in[w][0], in[w][1], split[w][1] / in[w][0], split[w][2]};
      if (split[w][2] * split[w][3] != in[w][2]) return false;
    }
    if (split[w].size() != 4 || split[w][0] != in[w][0] || split[w][1] != in[w][1]) return false;
    if (w > 0 && split[w][2] != heads) return false;
    heads = split[w][2];
  }
  const int64_t batch = in[0][0], sq = in[0][1], sk = in[1][1];
  if (in[1][0] != batch || in[2][0] != batch || in[2][1] != sk || split[0][3] != split[1][3])
    return false;
  // The numbers q, k or the scores are multiplied by or divided by.
  double scale = 1.0;
  for (const onnx::NodeProto* s : m.scales) {
    float c = 0.0f;
    const bool found = scalar(*s, 1, &c) || (s->op_type() == "Mul" && scalar(*s, 0, &c));
    if (!found || c == 0.0f || !std::isfinite(c)) return false;
    scale = s->op_type() == "Mul" ? scale * c : scale / c;
  }
  const int64_t axis = int_attr(*m.softmax, "axis", -1);
  if (axis != -1 && axis != (seq ? 2 : 3)) return false;  // the scores' last axis
  float p = 0.0f;
  if (m.dropout != nullptr) {
    const onnx::NodeProto& d = *m.dropout;
    float ratio = 0.5f;
    if (d.input_size() > 1 && !d.input(1).empty() && !scalar(d, 1, &ratio)) return false;
    bool training = false;
    if (d.input_size() > 2 && !d.input(2).empty()) {
      if (!is_constant(d.input(2))) return false;
      const Constant& t = constants_.at(d.input(2));
      training = !t.i.empty() ? t.i[0] != 0 : !t.f.empty() && t.f[0] != 0.0f;
    }
    p = training ? ratio : 0.0f;
    if (!(p >= 0.0f && p < 1.0f)) return false;
  }
  Dims merged;
  const Dims context =
      seq ? Dims{sq, batch * heads, split[2][3]} : Dims{batch, sq, heads, split[2][3]};
  if (!is_constant(m.out->input(1)) || int_attr(*m.out, "allowzero", 0) != 0 ||
      !reshape_target(constants_.at(m.out->input(1)), context, &merged) ||
      (seq ? merged != Dims{sq * batch, in[2][2]} && merged != Dims{sq, batch, in[2][2]}
           : merged != Dims{batch, sq, in[2][2]})) {
    return false;
  }
  // The mask: [Sq, Sk] or [B, 1, Sq, Sk] (fewer leading dims, and 1 for Sq or B, broadcast),
  // data the plan carries or a computed tensor that no parameter reaches.
  Dims mask_dims;
  std::string mask_name;
  bool head_mask = false;  // a sequence-first [B * heads, Sq or 1, Sk] mask alike across heads
  if (m.mask != nullptr) {
    mask_name = m.mask->input(m.mask_input);
    const bool known = is_constant(mask_name) || tensors_.count(mask_name) != 0;
    mask_dims = shape_of(mask_name);
    if (!known || mask_dims.size() > 4) return false;
    if (seq && mask_dims.size() == 3 && mask_dims[0] == batch * heads && heads > 1 &&
        !is_constant(mask_name)) {
      if (!alike_across_heads(mask_name, batch, heads)) return false;
      head_mask = true;
      mask_dims = {batch, 1, mask_dims[1], mask_dims[2]};
    }
    mask_dims.insert(mask_dims.begin(), 4 - mask_dims.size(), 1);
    if (mask_dims[1] != 1 || mask_dims[3] != sk || (mask_dims[2] != 1 && mask_dims[2] != sq) ||
        (mask_dims[0] != 1 && mask_dims[0] != batch)) {
      return false;
    }
    if (is_constant(mask_name)) {
      if (constants_.at(mask_name).type != onnx::TensorProto_DataType_FLOAT) return false;
    } else {
      const int t = tensors_.at(mask_name);
      if (out_.graph.tensors[t].dtype != REMAT_DTYPE_F32) return false;
      std::vector<bool> trained(out_.graph.tensors.size(), false);
      for (int param : out_.graph.params) trained[static_cast<size_t>(param)] = true;
      for (const Op& op : out_.graph.ops) {
        bool any = false;
        for (int i : op.inputs) any = any || trained[static_cast<size_t>(i)];
        for (int o : op.outputs)
          trained[static_cast<size_t>(o)] = trained[static_cast<size_t>(o)] || any;
      }
      if (trained[static_cast<size_t>(t)]) return false;  // autodiff refuses its gradient
    }
  }
  const std::string prefix = out_.graph.unique_name(m.out->output(0));
  int mask = -1;
  if (m.mask != nullptr) {
    mask = is_constant(mask_name) ? operand(*m.mask, m.mask_input, false)
                                  : tensor(*m.mask, m.mask_input);
    if (head_mask) {  // head 0's of [B, heads, Sq or 1, Sk]
      const int view = fresh(prefix + ".mask_heads", {batch, heads, mask_dims[2] * sk});
      out_.graph.add_op(OpCode::kCopy, {mask}, {view});
      mask = b_.select(view, 1, 0, out_.graph.unique_name(prefix + ".mask"));
    }
    Dims base = {mask_dims[2], sk};
    if (mask_dims[0] != 1) base.insert(base.begin(), batch);
    if (out_.graph.tensors[mask].shape != base) {
      const int view = fresh(prefix + ".mask", base);
      out_.graph.add_op(OpCode::kCopy, {mask}, {view});
      mask = view;
    }
    if (mask_dims[2] != sq) {
      base[base.size() - 2] = sq;
      mask = b_.broadcast(mask, static_cast<int64_t>(base.size()) - 2, 1, base,
                          out_.graph.unique_name(prefix + ".mask_rows"));
    }
  }
  if (seq) {
    const int q = batch_first(*m.reshape[0]), k = batch_first(*m.reshape[1]),
              v = batch_first(*m.reshape[2]);
    define_swapped(*m.out, 0,
                   b_.attention(q, k, v, mask, heads, static_cast<float>(scale), p,
                                AttentionKernel::kFused, prefix),
                   sq, merged);
    return true;
  }
  const int q = tensor(*m.reshape[0], 0), k = tensor(*m.reshape[1], 0),
            v = tensor(*m.reshape[2], 0);
  define(*m.out, 0,
         b_.attention(q, k, v, mask, heads, static_cast<float>(scale), p, AttentionKernel::kFused,
                      prefix));
  return true;
}

}  // namespace compiler
}  // namespace remat
