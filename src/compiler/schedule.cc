// Checkpoint choice (none, splits, selective, manual) and the segment-wise recompute rewrite.
#include "compiler/schedule.h"

#include <algorithm>

namespace remat {
namespace compiler {
namespace {

// Forward op that produced each tensor, or -1.
std::vector<int> producers(const Graph& g, size_t forward_ops) {
  std::vector<int> producer(g.tensors.size(), -1);
  for (size_t i = 0; i < forward_ops; ++i) {
    for (int t : g.ops[i].outputs) producer[t] = static_cast<int>(i);
  }
  return producer;
}

bool is_forward_activation(const Graph& g, const std::vector<int>& producer, int t) {
  return producer[t] >= 0 && g.tensors[t].role == Role::kActivation;
}

class Recomputer {
 public:
  Recomputer(Graph& g, size_t forward_ops, const std::vector<int>& checkpoints,
             const std::vector<std::vector<int>>& nested)
      : g_(g),
        forward_ops_(forward_ops),
        producer_(producers(g, forward_ops)),
        kept_(g.tensors.size(), false),
        copy_(g.tensors.size(), -1),
        segment_(forward_ops, 0),
        level_(g.tensors.size(), -1) {
    std::vector<bool> is_checkpoint(g.tensors.size(), false);
    for (int c : checkpoints) is_checkpoint[c] = true;
    // Nested checkpoints bound segments like checkpoints but are not kept: each is recomputed
    // when the backward pass first needs it (sweep) and held from then on.
    for (size_t level = 0; level < nested.size(); ++level) {
      for (int c : nested[level]) {
        if (!is_checkpoint[c] && level_[c] < 0) level_[c] = static_cast<int>(level);
      }
    }
    int s = 0;
    for (size_t i = 0; i < forward_ops; ++i) {
      segment_[i] = s;
      for (int t : g.ops[i].outputs) s += is_checkpoint[t] || level_[t] >= 0 ? 1 : 0;
    }
    last_segment_ = s;
    done_.assign(static_cast<size_t>(s) + 1, false);
    // Segments number the forward ops in order, so each is one run of ops: [begin_[s], begin_[s +
    // 1]).
    begin_.assign(static_cast<size_t>(s) + 2, forward_ops);
    for (size_t i = forward_ops; i-- > 0;) begin_[segment_[i]] = i;
    for (size_t k = begin_.size() - 1; k-- > 0;) begin_[k] = std::min(begin_[k], begin_[k + 1]);
    // Kept: checkpoints, everything not a forward activation, and the last segment (its
    // activations are still alive when the backward pass starts).
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      const int p = producer_[t];
      kept_[t] = is_checkpoint[t] || !is_forward_activation(g, producer_, static_cast<int>(t)) ||
                 segment_[p] == last_segment_;
    }
    // Only ops whose outputs the backward pass reads, directly or through other recomputed
    // ops (of this segment or, across a shortcut, of a later one), are recomputed.
    needed_.assign(g.tensors.size(), false);
    for (size_t i = forward_ops; i < g.ops.size(); ++i) {
      for (int t : g.ops[i].inputs) needed_[t] = needed_[t] || !kept_[t];
    }
    for (size_t i = forward_ops; i-- > 0;) {
      bool any = false;
      for (int t : g.ops[i].outputs) any = any || needed_[t];
      if (!any) continue;
      for (int t : g.ops[i].inputs) {
        if (!kept_[t]) needed_[t] = true;
      }
    }
  }

  void run() {
    std::vector<Op> tail(g_.ops.begin() + static_cast<long>(forward_ops_), g_.ops.end());
    g_.ops.resize(forward_ops_);
    for (Op op : tail) {
      for (int& t : op.inputs) t = resolve(t);
      // In-place updates name their outputs after their inputs; nothing there is recomputed.
      g_.ops.push_back(std::move(op));
    }
  }

 private:
  int resolve(int t) {
    if (kept_[t]) return t;
    if (copy_[t] < 0) make_copy(t);
    return copy_[t];
  }

  // Makes the recomputed copy of |t| (neither kept nor copied yet). A nested checkpoint is swept
  // to, also where it is read after the segment it starts is done (a weight gradient), rather
  // than recomputed with its whole segment ahead of time.
  void make_copy(int t) {
    if (level_[t] >= 0)
      sweep_to(t);
    else
      recompute_segment(segment_[producer_[t]]);
  }

  void recompute_segment(int s) {
    if (done_[s]) return;
    done_[s] = true;
    for (size_t i = begin_[s]; i < begin_[s + 1]; ++i) {
      bool any = false;
      for (int t : g_.ops[i].outputs) any = any || needed_[t];
      if (!any) continue;
      const Op source = g_.ops[i];
      std::vector<int> inputs;
      for (int t : source.inputs) {
        if (!kept_[t] && copy_[t] < 0) make_copy(t);
        inputs.push_back(kept_[t] ? t : copy_[t]);
      }
      std::vector<int> outputs;
      for (int t : source.outputs) {
        const int c = add_copy(t, "@recomputed");
        copy_[t] = c;
        outputs.push_back(c);
      }
      g_.add_op(source.code, inputs, outputs, source.iattrs, source.fattrs, Phase::kRecompute,
                static_cast<int>(i));
    }
  }

  // Recomputes nested checkpoint |target| from what is at hand (checkpoints, copies): the
  // forward ops it depends on run again. Of the nested checkpoints they make, those with no
  // coarser one between them and |target| are held as copies (the coarser levels of the whole
  // way, the finer ones only near |target|, as in a multi-level checkpointing scheme); every
  // other output is a temporary that dies after its last reader here. Those ops run once more
  // when the backward pass reaches their own segments: the price of holding one small
  // segment's working set at a time.
  void sweep_to(int target) {
    std::vector<bool> run(forward_ops_, false);
    std::vector<int> pending{target};
    std::vector<bool> seen(g_.tensors.size(), false);
    while (!pending.empty()) {
      const int t = pending.back();
      pending.pop_back();
      if (seen[t] || kept_[t] || copy_[t] >= 0) continue;
      seen[t] = true;
      run[producer_[t]] = true;
      for (int in : g_.ops[producer_[t]].inputs) pending.push_back(in);
    }
    std::vector<bool> hold(g_.tensors.size(), false);
    int coarsest = level_[target];
    for (size_t i = forward_ops_; i-- > 0;) {
      if (!run[i]) continue;
      for (int t : g_.ops[i].outputs) {
        if (level_[t] < 0 || level_[t] > coarsest) continue;
        hold[t] = true;
        coarsest = level_[t];
      }
    }
    std::vector<int> temporary(g_.tensors.size(), -1);
    for (size_t i = 0; i < forward_ops_; ++i) {
      if (!run[i]) continue;
      const Op source = g_.ops[i];
      std::vector<int> inputs;
      for (int t : source.inputs)
        inputs.push_back(kept_[t] ? t : copy_[t] >= 0 ? copy_[t] : temporary[t]);
      std::vector<int> outputs;
      for (int t : source.outputs) {
        const int c = add_copy(t, hold[t] ? "@recomputed" : "@swept");
        if (hold[t])
          copy_[t] = c;
        else
          temporary[t] = c;
        outputs.push_back(c);
      }
      g_.add_op(source.code, inputs, outputs, source.iattrs, source.fattrs, Phase::kRecompute,
                static_cast<int>(i));
    }
  }

  // A new activation shaped like |t|, named after it (made unique: a tensor may be swept more
  // than once), that the rewrite's own tables know.
  int add_copy(int t, const char* suffix) {
    const Tensor& x = g_.tensors[t];
    const int c =
        g_.add_tensor(g_.unique_name(x.name + suffix), x.dtype, x.shape, Role::kActivation);
    copy_.push_back(-1);
    kept_.push_back(true);
    needed_.push_back(false);
    level_.push_back(-1);
    return c;
  }

  Graph& g_;
  size_t forward_ops_;
  std::vector<int> producer_;
  std::vector<bool> kept_;
  std::vector<int> copy_;
  std::vector<int> segment_;
  std::vector<bool> needed_;
  std::vector<bool> done_;
  std::vector<int> level_;     // level of each nested checkpoint (0 the coarsest), else -1
  std::vector<size_t> begin_;  // first forward op of each segment (segment count + 1 entries)
  int last_segment_ = 0;
};

std::vector<int> manual_checkpoints(const Graph& g, size_t forward_ops, const std::string& list) {
  const std::vector<int> candidates = checkpoint_candidates(g, forward_ops);
  std::vector<int> chosen;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    const std::string name = list.substr(at, comma - at);
    at = comma + 1;
    const int t = g.find(name);
    if (t < 0 || std::find(candidates.begin(), candidates.end(), t) == candidates.end()) {
      std::string names;
      for (size_t i = 0; i < candidates.size() && i < 40; ++i)
        names += (i ? ", " : "") + g.tensors[candidates[i]].name;
      if (candidates.size() > 40)
        names += ", ... (" + std::to_string(candidates.size()) + " in all)";
      throw CompileError("manual checkpoint '" + name + "' is " +
                         (t < 0 ? std::string("not a tensor of the model")
                                : "not a forward activation the backward pass reads") +
                         "; candidates: " + names);
    }
    chosen.push_back(t);
  }
  return chosen;
}

// Selective's kept products move down their chain of single-reader ops: a kept tensor whose only
// reader is one op with one output of the same bytes, and which the backward pass does not read,
// gives its place to that output, so the chain is not recomputed (as many bytes are kept, and
// nothing the dropped tensor fed needs it again; the segment boundary moves with it, so the
// planned arena can still differ a little either way). A kept product y = x W feeding
// q = permute(y + b) keeps q, which the attention core's backward reads anyway; one feeding a
// residual sum keeps the sum, which the layer norm's backward reads. Stops at a tensor that is not
// among |candidates|.
std::vector<int> past_cheap_chains(const Graph& g, size_t forward_ops, std::vector<int> kept,
                                   const std::vector<int>& candidates) {
  std::vector<int> forward_readers(g.tensors.size(), 0), reader(g.tensors.size(), -1);
  std::vector<bool> backward_read(g.tensors.size(), false), candidate(g.tensors.size(), false);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    for (int t : g.ops[i].inputs) {
      if (i < forward_ops) {
        ++forward_readers[t];
        reader[t] = static_cast<int>(i);
      } else {
        backward_read[t] = true;
      }
    }
  }
  for (int t : candidates) candidate[t] = true;
  for (int& t : kept) {
    while (forward_readers[t] == 1 && !backward_read[t]) {
      const Op& next = g.ops[reader[t]];
      if (next.outputs.size() != 1) break;
      const int u = next.outputs[0];
      if (u == t || !candidate[u] || g.tensors[u].bytes() != g.tensors[t].bytes()) break;
      t = u;
    }
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

}  // namespace

std::vector<int> checkpoint_candidates(const Graph& g, size_t forward_ops) {
  const std::vector<int> producer = producers(g, forward_ops);
  std::vector<bool> read(g.tensors.size(), false);
  for (size_t i = forward_ops; i < g.ops.size(); ++i) {
    for (int t : g.ops[i].inputs) read[t] = true;
  }
  // A forward activation the backward pass does not read is dead by then either way; one
  // that feeds a recomputed op counts too, since recompute reads it.
  for (size_t i = forward_ops; i-- > 0;) {
    bool any = false;
    for (int t : g.ops[i].outputs) any = any || read[t];
    if (!any) continue;
    for (int t : g.ops[i].inputs) read[t] = true;
  }
  std::vector<int> out;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (read[t] && is_forward_activation(g, producer, static_cast<int>(t)))
      out.push_back(static_cast<int>(t));
  }
  return out;
}

std::vector<int> split_points(const Graph& g, size_t forward_ops) {
  const std::vector<int> producer = producers(g, forward_ops);
  std::vector<int> last_read(g.tensors.size(), -1);
  for (size_t i = 0; i < forward_ops; ++i) {
    for (int t : g.ops[i].inputs) last_read[t] = static_cast<int>(i);
  }
  // live[i]: forward activations made at or before op i that a later forward op reads.
  std::vector<int> count(forward_ops + 1, 0);
  std::vector<long long> id_sum(forward_ops + 1, 0);
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    if (!is_forward_activation(g, producer, static_cast<int>(t)) || last_read[t] <= producer[t])
      continue;
    count[producer[t]] += 1;
    count[last_read[t]] -= 1;
    id_sum[producer[t]] += static_cast<long long>(t);
    id_sum[last_read[t]] -= static_cast<long long>(t);
  }
  std::vector<int> out;
  int live = 0;
  long long ids = 0;
  for (size_t i = 0; i < forward_ops; ++i) {
    live += count[i];
    ids += id_sum[i];
    if (live != 1) continue;
    const int t = static_cast<int>(ids);
    if (producer[t] == static_cast<int>(i)) out.push_back(t);
  }
  return out;
}

std::vector<int> choose_checkpoints(const Graph& g, size_t forward_ops,
                                    const std::string& strategy) {
  if (strategy == "none") return checkpoint_candidates(g, forward_ops);
  if (strategy.compare(0, 7, "manual:") == 0)
    return manual_checkpoints(g, forward_ops, strategy.substr(7));
  if (strategy == "splits") return split_points(g, forward_ops);
  if (strategy == "selective") {
    // Keep what is costly to recompute and cheap to store: outputs of products with a weight
    // (Linear and convolution layers), normalisations and lookups. Recompute the elementwise
    // and data-movement ops (activations, pooling), and the attention core (q k^T, softmax,
    // dropout, p v), whose [B, A, S, S] tensors are the largest and cheapest to redo
    // (Korthikanti et al. 2022). A fused attention op is the same core in one op: recomputed
    // too, its context and log-sum-exp not kept, so the backward pass holds nothing quadratic
    // and no more than the heads. A
    // product's bias add (an op of its own only where an imported MatMul is followed by an Add: a
    // Linear's bias is the matmul's), head split or residual sum is kept in its place where nothing
    // else needs it (past_cheap_chains).
    const std::vector<int> candidates = checkpoint_candidates(g, forward_ops);
    const std::vector<int> producer = producers(g, forward_ops);
    std::vector<int> chosen;
    for (int t : candidates) {
      const Op& op = g.ops[producer[t]];
      bool weight = false;
      for (int in : op.inputs) weight = weight || g.tensors[in].role == Role::kParam;
      if (((op.code == OpCode::kMatMul || op.code == OpCode::kConv) && weight) ||
          op.code == OpCode::kLayerNorm || op.code == OpCode::kBatchNorm ||
          op.code == OpCode::kEmbedding) {
        chosen.push_back(t);
      }
    }
    return past_cheap_chains(g, forward_ops, chosen, candidates);
  }
  throw CompileError("strategy '" + strategy +
                     "' is not supported (strategies: none, sqrt, splits, selective, budget, auto, "
                     "manual:T1,T2,...)");
}

void apply_recompute(Graph& graph, size_t forward_ops, const std::vector<int>& checkpoints,
                     const std::vector<std::vector<int>>& nested) {
  Recomputer(graph, forward_ops, checkpoints, nested).run();
}

}  // namespace compiler
}  // namespace remat
