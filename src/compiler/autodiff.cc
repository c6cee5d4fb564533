// Backward rules of every forward op, emitted in reverse order of the forward pass.
#include "compiler/autodiff.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "plan/head_matmul_shape.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace compiler {
namespace {

class Differentiator {
 public:
  Differentiator(Graph& g, const OptimizerSpec& opt, FiniteChecks finite_checks,
                 const DataParallel& data_parallel)
      : g_(g),
        opt_(opt),
        finite_checks_(finite_checks),
        data_parallel_(data_parallel),
        grad_(g.tensors.size(), -1),
        needs_(g.tensors.size(), false) {}

  void run() {
    if (g_.loss < 0) throw CompileError("graph has no loss: nothing to differentiate");
    const int forward_ops = static_cast<int>(g_.ops.size());
    for (int p : g_.params) needs_[p] = true;
    std::vector<int> first_reader(g_.tensors.size(), -1);
    for (int i = 0; i < forward_ops; ++i) {
      const Op& op = g_.ops[i];
      bool any = false;
      for (int t : op.inputs) {
        any = any || needs_[t];
        if (first_reader[t] < 0) first_reader[t] = i;
      }
      for (int t : op.outputs) needs_[t] = needs_[t] || any;
    }
    // Parameters by their first reader, in the order of g_.params (so updates keep that order).
    std::vector<std::vector<int>> first_read_at(static_cast<size_t>(forward_ops));
    for (int p : g_.params) {
      if (first_reader[p] < 0) {
        throw CompileError("parameter '" + g_.tensors[p].name + "' is not used by any op");
      }
      first_read_at[first_reader[p]].push_back(p);
    }
    // Data-parallel: the loss joins the first bucket, and is checked after its sum.
    if (data_parallel_.enabled) add_to_bucket(g_.loss, -1);
    if (!data_parallel_.enabled) guard_and_update({g_.loss, -1}, forward_ops - 1);
    const int loss_op = seed_loss_gradient(forward_ops);
    for (int i = forward_ops - 1; i >= 0; --i) {
      backward_of(i);
      if (i == loss_op) scale_loss_gradients(i);
      // A parameter's gradient is final once the backward of its first reader has run.
      for (int p : first_read_at[i]) {
        if (grad_[p] < 0) {
          throw CompileError("parameter '" + g_.tensors[p].name + "' does not reach the loss");
        }
        unscale(p, i);
        if (data_parallel_.enabled) {
          if (static_cast<int>(open_.size()) == kMaxBucketTensors) start_bucket(i);
          add_to_bucket(grad_[p], p);
        } else {
          guard_and_update({grad_[p], p}, i);
        }
      }
      // A bucket closes after the op that filled it, with every gradient that op finished (a
      // layer's weight and bias): a bucket started right after another, with no op between
      // them, would only queue behind it.
      if (data_parallel_.enabled && !first_read_at[i].empty() && bucket_full()) start_bucket(i);
    }
    if (data_parallel_.enabled) {
      if (!open_.empty()) start_bucket(0);
      if (!started_.empty()) finish_bucket(0);
    }
    for (const Update& u : deferred_) append_update(g_, opt_, u.param, u.grad, u.source);
  }

 private:
  // A tensor the step guards and, for a parameter's gradient, the update that reads it.
  struct Guarded {
    int tensor;
    int param;  // -1: none (the loss).
  };
  struct Update {
    int param, grad, source;
  };

  // The finite check of |g|'s tensor and the update of its parameter, emitted as the backward of
  // op |source|. Each update runs as soon as its gradient is final and checked, so gradients
  // need not all be alive at once; atomic checks make every update wait for the last check.
  void guard_and_update(const Guarded& g, int source) {
    if (finite_checks_ != FiniteChecks::kOff) check_finite(g.tensor, source);
    if (g.param < 0) return;
    if (finite_checks_ == FiniteChecks::kAtomic) {
      deferred_.push_back({g.param, g.tensor, source});
    } else {
      append_update(g_, opt_, g.param, g.tensor, source);
    }
  }

  // Data-parallel buckets (compiler/data_parallel.h).
  void add_to_bucket(int tensor, int param) {
    open_.push_back({tensor, param});
    open_bytes_ += g_.tensors[tensor].bytes();
  }
  bool bucket_full() const {
    return open_bytes_ >= data_parallel_.bucket_bytes ||
           static_cast<int>(open_.size()) == kMaxBucketTensors;
  }
  std::vector<int> open_tensors() const {
    std::vector<int> tensors;
    for (const Guarded& g : open_) tensors.push_back(g.tensor);
    return tensors;
  }
  // Starts the open bucket after op |source|'s backward, then waits for the bucket started
  // before it, whose sum had that much time to run.
  void start_bucket(int source) {
    const int64_t bucket = static_cast<int64_t>(bucket_count_++);
    g_.add_op(OpCode::kAllreduceStart, open_tensors(), {}, {bucket}, {}, Phase::kUpdate, source);
    std::vector<Guarded> started = std::move(open_);
    open_.clear();
    open_bytes_ = 0;
    if (!started_.empty()) finish_bucket(source);
    started_ = std::move(started);
    started_bucket_ = bucket;
  }
  // The wait of the bucket last started, then its checks and updates.
  void finish_bucket(int source) {
    std::vector<int> tensors;
    for (const Guarded& g : started_) tensors.push_back(g.tensor);
    g_.add_op(OpCode::kAllreduceWait, tensors, {}, {started_bucket_}, {}, Phase::kUpdate, source);
    for (const Guarded& g : started_) guard_and_update(g, source);
    started_.clear();
  }

  // The guard of the update (plan/op_catalogue.h, finite_check) on tensor |t|.
  void check_finite(int t, int source) {
    g_.add_op(OpCode::kFiniteCheck, {t}, {}, {}, {}, Phase::kUpdate, source);
  }

  // A loss computed by ordinary ops (an imported model's mean of squares) starts from
  // dloss = 1, a fill; the loss ops (softmax_cross_entropy, mse) start their gradient themselves.
  // Returns the index of the op that writes the loss.
  int seed_loss_gradient(int forward_ops) {
    for (int i = forward_ops - 1; i >= 0; --i) {
      const Op& op = g_.ops[i];
      if (op.outputs.empty() || op.outputs[0] != g_.loss) continue;
      if (op.code == OpCode::kSoftmaxCrossEntropy || op.code == OpCode::kMse) return i;
      current_ = i;
      const int seed = grad_tensor(g_.loss);
      emit(OpCode::kFill, {}, {seed}, {}, named({{attr::fill::value, 1.0f}}));
      grad_[g_.loss] = seed;
      return i;
    }
    throw CompileError("the loss '" + g_.tensors[g_.loss].name + "' is written by no forward op");
  }

  // A new gradient tensor shaped like |like|, of its dtype: a 16-bit activation's gradient is
  // 16-bit, a parameter's float32 (compiler/precision.h).
  int grad_tensor(int like) {
    const Tensor& t = g_.tensors[like];
    std::string name = "grad." + t.name;
    for (int n = 1; g_.find(name) >= 0; ++n) name = "grad." + t.name + "#" + std::to_string(n);
    // Only forward tensors are ever looked up in grad_ and needs_, so they do not grow here.
    const int grad = g_.add_tensor(name, t.dtype, t.shape, Role::kGrad);
    if (g_.tensors[like].role == Role::kParam) g_.param_grads.push_back(grad);
    return grad;
  }

  // Dynamic loss scaling (compiler/loss_scaling.h): every gradient flows from the loss op's
  // inputs, so scaling theirs by S, right after the loss op's backward, scales the backward pass.
  void scale_loss_gradients(int loss_op) {
    LossScalingTensors& l = g_.loss_scaling;
    if (l.scale < 0) return;
    const float s = scale_value();
    std::vector<int> done;
    for (int t : g_.ops[loss_op].inputs) {
      // An input the loss op reads twice (Add(x, x)) has one gradient: scaled once.
      if (grad_[t] < 0 || std::find(done.begin(), done.end(), t) != done.end()) continue;
      done.push_back(t);
      const int scaled = grad_tensor(t);
      emit(OpCode::kScale, {grad_[t]}, {scaled}, {}, named({{attr::scale::alpha, s}}));
      grad_[t] = scaled;
      l.scaled.push_back(scaled);
    }
  }

  // Parameter |p|'s final gradient divided by S again, before its check and update.
  void unscale(int p, int source) {
    LossScalingTensors& l = g_.loss_scaling;
    if (l.scale < 0) return;
    current_ = source;
    const int unscaled = grad_tensor(p);
    emit(OpCode::kScale, {grad_[p]}, {unscaled}, {},
         named({{attr::scale::alpha, 1.0f / scale_value()}}));
    grad_[p] = unscaled;
    l.unscaled.push_back(unscaled);
  }

  // The initial S, from the scale tensor's bytes (the session sets the alphas from then on).
  float scale_value() const {
    float s;
    memcpy(&s, g_.tensors[g_.loss_scaling.scale].init_data.data(), sizeof(float));
    return s;
  }

  // Adds |g| into the gradient of |t| (a sum when |t| already has one).
  void accumulate(int t, int g) {
    if (grad_[t] < 0) {
      grad_[t] = g;
      return;
    }
    const int sum = grad_tensor(t);
    emit(OpCode::kAdd, {grad_[t], g}, {sum});
    grad_[t] = sum;
  }

  void emit(OpCode code, std::vector<int> in, std::vector<int> out, std::vector<int64_t> i = {},
            std::vector<float> f = {}) {
    g_.add_op(code, std::move(in), std::move(out), std::move(i), std::move(f), Phase::kBackward,
              current_);
  }

  // Emits |code|(ins) -> a new gradient of |target| and accumulates it.
  void grad_op(int target, OpCode code, std::vector<int> in, std::vector<int64_t> i = {},
               std::vector<float> f = {}) {
    if (!needs_[target]) return;
    const int out = grad_tensor(target);
    emit(code, std::move(in), {out}, std::move(i), std::move(f));
    accumulate(target, out);
  }

  void backward_of(int index) {
    current_ = index;
    const Op op = g_.ops[index];  // copy: emitting ops grows g_.ops
    // The gradient starts at the op that writes the graph's loss; another loss op (a metric)
    // gets no gradient of its own.
    const bool is_loss = (op.code == OpCode::kSoftmaxCrossEntropy || op.code == OpCode::kMse) &&
                         op.outputs[0] == g_.loss;
    if (!is_loss && grad_[op.outputs[0]] < 0) return;
    const int dy = is_loss ? -1 : grad_[op.outputs[0]];
    const std::vector<int>& in = op.inputs;
    const std::vector<int>& out = op.outputs;
    switch (op.code) {
      case OpCode::kMatMul: matmul(op, dy); break;
      case OpCode::kHeadMatMul: head_matmul(op, dy); break;
      case OpCode::kBiasAdd:
        if (needs_[in[0]]) accumulate(in[0], dy);
        grad_op(in[1], OpCode::kReduceLeading, {dy});
        break;
      case OpCode::kAdd:
        if (needs_[in[0]]) accumulate(in[0], dy);
        if (needs_[in[1]]) accumulate(in[1], dy);
        break;
      case OpCode::kMul:
        grad_op(in[0], OpCode::kMul, {dy, in[1]});
        grad_op(in[1], OpCode::kMul, {dy, in[0]});
        break;
      case OpCode::kScale: grad_op(in[0], OpCode::kScale, {dy}, {}, op.fattrs); break;
      case OpCode::kRelu: grad_op(in[0], OpCode::kReluGrad, {dy, out[0]}); break;
      case OpCode::kGelu: grad_op(in[0], OpCode::kGeluGrad, {dy, in[0]}); break;
      case OpCode::kTanh: grad_op(in[0], OpCode::kTanhGrad, {dy, out[0]}); break;
      case OpCode::kSigmoid: grad_op(in[0], OpCode::kSigmoidGrad, {dy, out[0]}); break;
      case OpCode::kSoftmax: grad_op(in[0], OpCode::kSoftmaxGrad, {dy, out[0]}); break;
      case OpCode::kDropout:
        grad_op(in[0], OpCode::kDropoutGrad, {dy}, op.iattrs, op.fattrs);
        break;
      case OpCode::kCopy: grad_op(in[0], OpCode::kCopy, {dy}); break;
      case OpCode::kSelect: grad_op(in[0], OpCode::kSelectGrad, {dy}, op.iattrs); break;
      case OpCode::kEmbedding: grad_op(in[1], OpCode::kEmbeddingGrad, {dy, in[0]}); break;
      case OpCode::kPermute: permute(op, dy); break;
      case OpCode::kLayerNorm: normalisation(op, dy, OpCode::kLayerNormGrad, {}); break;
      case OpCode::kAttention: attention(op, dy); break;
      case OpCode::kBatchNorm: normalisation(op, dy, OpCode::kBatchNormGrad, op.fattrs); break;
      case OpCode::kConv: conv(op, dy); break;
      case OpCode::kMaxPool: grad_op(in[0], OpCode::kMaxPoolGrad, {dy, in[0]}, op.iattrs); break;
      case OpCode::kAvgPool: grad_op(in[0], OpCode::kAvgPoolGrad, {dy}, op.iattrs); break;
      case OpCode::kGlobalAvgPool: grad_op(in[0], OpCode::kGlobalAvgPoolGrad, {dy}); break;
      case OpCode::kPad: grad_op(in[0], OpCode::kPadGrad, {dy}, op.iattrs); break;
      case OpCode::kConcat: {
        // Each part's gradient is its slice of dy.
        const int64_t axis = op.attr(attr::concat::axis);
        int64_t offset = 0;
        for (int part : in) {
          grad_op(part, OpCode::kSlice, {dy},
                  named({{attr::slice::axis, axis}, {attr::slice::offset, offset}}));
          offset += g_.tensors[part].shape[axis];
        }
        break;
      }
      case OpCode::kSlice: slice(op, dy); break;
      case OpCode::kPowScalar:
        grad_op(in[0], OpCode::kPowScalarGrad, {dy, in[0]}, {}, op.fattrs);
        break;
      case OpCode::kSquareRoot: grad_op(in[0], OpCode::kSquareRootGrad, {dy, out[0]}); break;
      case OpCode::kLeakyRelu:
        grad_op(in[0], OpCode::kLeakyReluGrad, {dy, in[0]}, {}, op.fattrs);
        break;
      case OpCode::kErrorFunction: grad_op(in[0], OpCode::kErrorFunctionGrad, {dy, in[0]}); break;
      case OpCode::kClip: grad_op(in[0], OpCode::kClipGrad, {dy, in[0]}, {}, op.fattrs); break;
      case OpCode::kHardSigmoid:
        grad_op(in[0], OpCode::kHardSigmoidGrad, {dy, in[0]}, {}, op.fattrs);
        break;
      case OpCode::kLogSoftmax: grad_op(in[0], OpCode::kLogSoftmaxGrad, {dy, out[0]}); break;
      case OpCode::kReduceSum: grad_op(in[0], OpCode::kBroadcast, {dy}, op.iattrs); break;
      case OpCode::kBroadcast: grad_op(in[0], OpCode::kReduceSum, {dy}, op.iattrs); break;
      case OpCode::kSoftmaxCrossEntropy:
        grad_op(in[0], OpCode::kSoftmaxCrossEntropyGrad, {out[1], in[1]});
        break;
      case OpCode::kMse: grad_op(in[0], OpCode::kMseGrad, {in[0], in[1]}); break;
      default:
        throw CompileError(std::string("no backward rule for op '") +
                           op_name(static_cast<uint16_t>(op.code)) + "'");
    }
  }

  // One gradient product of C = alpha op(A) op(B): d(target) = alpha op(x) op(y), each of
  // target, x and y a slot (0: A, 1: B, 2: dC).
  struct GradProduct {
    int target, x, y;
    bool tx, ty;
  };

  // dA's and dB's products for the transposes of A and B; matmul and head_matmul share them.
  static std::array<GradProduct, 2> gradient_products(bool ta, bool tb) {
    if (!ta && !tb) return {{{0, 2, 1, false, true}, {1, 0, 2, true, false}}};
    if (!ta && tb) return {{{0, 2, 1, false, false}, {1, 2, 0, true, false}}};
    if (ta && !tb) return {{{0, 1, 2, false, true}, {1, 0, 2, false, false}}};
    return {{{0, 1, 2, true, true}, {1, 2, 0, true, true}}};
  }

  // C = alpha op(A) op(B) [+ bias]: each gradient is another matmul (see plan/matmul_shape.h for
  // the shape modes); the bias's is dC summed over its rows, first, where bias_add's was.
  void matmul(const Op& op, int dc) {
    if (op.inputs.size() > 2) grad_op(op.inputs[2], OpCode::kReduceLeading, {dc});
    const int slot[] = {op.inputs[0], op.inputs[1], dc};
    namespace a = attr::matmul;
    for (const GradProduct& p :
         gradient_products(op.attr(a::trans_a) != 0, op.attr(a::trans_b) != 0)) {
      grad_op(slot[p.target], OpCode::kMatMul, {slot[p.x], slot[p.y]},
              named({{a::trans_a, p.tx ? 1 : 0}, {a::trans_b, p.ty ? 1 : 0}}), op.fattrs);
    }
  }

  // C = alpha op(A) op(B) per head: each gradient another head_matmul whose tensors keep their
  // layouts (a gradient has its tensor's shape, so an interleaved tensor's gradient is
  // interleaved too).
  void head_matmul(const Op& op, int dc) {
    const int slot[] = {op.inputs[0], op.inputs[1], dc};
    namespace a = attr::head_matmul;
    const int64_t heads = op.attr(a::heads), layout = op.attr(a::interleaved);
    const bool interleaved[] = {(layout & kHeadsOfA) != 0, (layout & kHeadsOfB) != 0,
                                (layout & kHeadsOfC) != 0};
    for (const GradProduct& p :
         gradient_products(op.attr(a::trans_a) != 0, op.attr(a::trans_b) != 0)) {
      const int64_t bits = (interleaved[p.x] ? kHeadsOfA : 0) | (interleaved[p.y] ? kHeadsOfB : 0) |
                           (interleaved[p.target] ? kHeadsOfC : 0);
      grad_op(slot[p.target], OpCode::kHeadMatMul, {slot[p.x], slot[p.y]},
              named({{a::trans_a, p.tx ? 1 : 0},
                     {a::trans_b, p.ty ? 1 : 0},
                     {a::heads, heads},
                     {a::interleaved, bits}}),
              op.fattrs);
    }
  }

  // y, stat1, stat2 = norm(x, gamma, beta) (layernorm, batch_norm): one gradient op reads dy,
  // x, the statistics and gamma, and writes dx, dgamma and dbeta.
  void normalisation(const Op& op, int dy, OpCode grad_code, std::vector<float> fattrs) {
    const std::vector<int>& in = op.inputs;
    const int dx = grad_tensor(in[0]), dgamma = grad_tensor(in[1]), dbeta = grad_tensor(in[2]);
    emit(grad_code, {dy, in[0], op.outputs[1], op.outputs[2], in[1]}, {dx, dgamma, dbeta}, {},
         std::move(fattrs));
    if (needs_[in[0]]) accumulate(in[0], dx);
    accumulate(in[1], dgamma);
    accumulate(in[2], dbeta);
  }

  // context, lse = attention(q, k, v[, mask]): one gradient op reads dcontext, q, k, v, the
  // outputs and the mask, recomputes the probabilities and writes dq, dk and dv. The mask is
  // data (padding, causality): a mask computed from parameters has no gradient here.
  void attention(const Op& op, int dy) {
    const std::vector<int>& in = op.inputs;
    if (in.size() > 3 && needs_[in[3]]) {
      throw CompileError("attention mask '" + g_.tensors[in[3]].name +
                         "' depends on parameters: its gradient is not supported");
    }
    const int grads[3] = {grad_tensor(in[0]), grad_tensor(in[1]), grad_tensor(in[2])};
    std::vector<int> inputs{dy, in[0], in[1], in[2], op.outputs[0], op.outputs[1]};
    if (in.size() > 3) inputs.push_back(in[3]);
    emit(OpCode::kAttentionGrad, std::move(inputs), {grads[0], grads[1], grads[2]}, op.iattrs,
         op.fattrs);
    for (int i = 0; i < 3; ++i) {
      if (needs_[in[i]]) accumulate(in[i], grads[i]);
    }
  }

  // y = conv(x, w) [+ bias]: dx and dw are convolutions of dy with the same attributes, dx
  // with a workspace where plan/spatial_shape.h asks for one; the bias's is a channel sum.
  void conv(const Op& op, int dy) {
    const int x = op.inputs[0], w = op.inputs[1];
    if (needs_[x]) {
      const Tensor &tx = g_.tensors[x], &tw = g_.tensors[w];
      const ConvShape shape =
          conv_shape(tx.shape.data(), tw.shape.data(), static_cast<int>(tx.shape.size()),
                     conv_attrs(op.iattrs.data()));
      // A copy: grad_tensor() adds a tensor, which may move g_.tensors (and tx with it).
      const std::string workspace_name = tx.name + "@grad_input_workspace";
      const int dx = grad_tensor(x);
      std::vector<int> outputs{dx};
      const int64_t workspace = conv_grad_input_workspace_elems(shape);
      if (workspace > 0) {
        outputs.push_back(g_.add_tensor(g_.unique_name(workspace_name), REMAT_DTYPE_F32,
                                        {workspace}, Role::kScratch));
      }
      emit(OpCode::kConvGradInput, {dy, w}, outputs, op.iattrs);
      accumulate(x, dx);
    }
    const int dw = grad_tensor(w);
    emit(OpCode::kConvGradWeight, {dy, x}, {dw}, op.iattrs);
    accumulate(w, dw);
    if (op.inputs.size() > 2) grad_op(op.inputs[2], OpCode::kChannelSum, {dy});
  }

  // The inverse permutation, applied to dy viewed with the permuted dims.
  void permute(const Op& op, int dy) {
    namespace a = attr::permute;
    const int64_t r = op.attr(a::rank);
    std::vector<int64_t> attrs{r};
    for (int64_t k = 0; k < r; ++k) attrs.push_back(op.iattrs[a::dim(op.iattrs[a::perm(r, k)])]);
    std::vector<int64_t> inverse(r);
    for (int64_t k = 0; k < r; ++k) inverse[op.iattrs[a::perm(r, k)]] = k;
    attrs.insert(attrs.end(), inverse.begin(), inverse.end());
    grad_op(op.inputs[0], OpCode::kPermute, {dy}, attrs);
  }

  // y = x.narrow(axis, offset, n): dx is dy with zeros around it along the axis. Viewed as [outer,
  // 1, n, inner] that is pad's top and bottom, so the rule is pad between two reshaping copies.
  void slice(const Op& op, int dy) {
    const int x = op.inputs[0];
    if (!needs_[x]) return;
    const std::vector<int64_t> dims = g_.tensors[x].shape;
    const size_t axis = static_cast<size_t>(op.attr(attr::slice::axis));
    const int64_t offset = op.attr(attr::slice::offset), n = g_.tensors[dy].shape[axis];
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < axis; ++k) outer *= dims[k];
    for (size_t k = axis + 1; k < dims.size(); ++k) inner *= dims[k];
    auto temp = [&](const std::vector<int64_t>& shape) {
      return g_.add_tensor(g_.unique_name("grad." + g_.tensors[x].name + ".slice"),
                           g_.tensors[x].dtype, shape, Role::kGrad);
    };
    const int viewed = temp({outer, 1, n, inner});
    emit(OpCode::kCopy, {dy}, {viewed});
    const int padded = temp({outer, 1, dims[axis], inner});
    namespace p = attr::pad;
    emit(OpCode::kPad, {viewed}, {padded},
         named(
             {{p::top, offset}, {p::bottom, dims[axis] - offset - n}, {p::left, 0}, {p::right, 0}}),
         named({{p::value, 0.0f}}));
    const int dx = grad_tensor(x);
    emit(OpCode::kCopy, {padded}, {dx});
    accumulate(x, dx);
  }

  Graph& g_;
  const OptimizerSpec& opt_;
  const FiniteChecks finite_checks_;
  const DataParallel data_parallel_;
  std::vector<Update> deferred_;  // Updates that wait for every check (kAtomic).
  std::vector<Guarded> open_;     // The bucket being filled, and its bytes.
  uint64_t open_bytes_ = 0;
  std::vector<Guarded> started_;  // The bucket started last and not yet waited for.
  int64_t started_bucket_ = 0;
  uint32_t bucket_count_ = 0;
  std::vector<int> grad_;
  std::vector<bool> needs_;
  int current_ = -1;
};

}  // namespace

void append_backward_and_updates(Graph& graph, const OptimizerSpec& optimizer,
                                 FiniteChecks finite_checks, const DataParallel& data_parallel) {
  Differentiator(graph, optimizer, finite_checks, data_parallel).run();
}

}  // namespace compiler
}  // namespace remat
