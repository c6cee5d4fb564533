// The op table: every opcode a plan may contain, with its arity and attribute layout.
//
// This file is the contract between the compiler (which emits ops), the runtime (which verifies
// them) and every backend (which executes them). Opcodes are append-only: a number once given
// is never reused, so old plans keep their meaning.
//
// Conventions for every op below:
// - Tensors are dense, row-major. "f32" tensors are float32, "i32" tensors are int32.
// - rows(x) = numel(x) / last_dim(x); "last axis" is the innermost dimension.
// - iattrs are int64 attributes, fattrs are float32 attributes, in the order listed.
// - An op never reads and writes the same tensor unless it says "in place".
// - A step context (seed from the plan, step index from the session) is passed to every op.
#ifndef REMAT_PLAN_OPS_H_
#define REMAT_PLAN_OPS_H_

#include <stdint.h>

namespace remat {

/// Every op a plan may contain. Values are stored in plans: append only.
enum class OpCode : uint16_t {
  kInvalid = 0,
  /// C = alpha * op(A) * op(B). in: A, B; out: C. iattrs: [trans_a, trans_b]; fattrs: [alpha].
  /// The matrix of a tensor is its last two dims, its batch the product of the others.
  /// Allowed shape modes (K = contracted dim):
  ///   batched:   batch(A) == batch(B) == batch(C)
  ///   broadcast: rank(B) == 2, batch(A) == batch(C)  (B shared by every batch entry)
  ///   reduce:    rank(C) == 2, batch(A) == batch(B) > 1; C = sum over batch (weight grads)
  kMatMul = 1,
  /// y = x + broadcast(b). in: x, b; out: y. b's shape equals x's trailing dims.
  kBiasAdd = 2,
  /// db = dy summed over leading dims. in: dy; out: db, whose shape equals dy's trailing dims.
  kReduceLeading = 3,
  /// c = a + b, same shapes. in: a, b; out: c.
  kAdd = 4,
  /// c = a * b (elementwise), same shapes. in: a, b; out: c.
  kMul = 5,
  /// y = max(x, 0). in: x; out: y.
  kRelu = 6,
  /// dx = dy * (y > 0). in: dy, y; out: dx.
  kReluGrad = 7,
  /// y = 0.5 * x * (1 + erf(x / sqrt(2))) (exact GELU). in: x; out: y.
  kGelu = 8,
  /// dx = dy * gelu'(x). in: dy, x; out: dx.
  kGeluGrad = 9,
  /// y = tanh(x). in: x; out: y.
  kTanh = 10,
  /// dx = dy * (1 - y*y). in: dy, y; out: dx.
  kTanhGrad = 11,
  /// y = 1 / (1 + exp(-x)). in: x; out: y.
  kSigmoid = 12,
  /// dx = dy * y * (1 - y). in: dy, y; out: dx.
  kSigmoidGrad = 13,
  /// Softmax over the last axis. in: x; out: y.
  kSoftmax = 14,
  /// dx = y * (dy - sum_last_axis(dy * y)). in: dy, y; out: dx.
  kSoftmaxGrad = 15,
  /// Layer normalisation over the last axis (N = last dim), biased variance:
  ///   mean = sum(x)/N, rstd = 1/sqrt(sum((x-mean)^2)/N + eps), y = (x-mean)*rstd*gamma + beta.
  /// in: x, gamma[N], beta[N]; out: y, mean[rows], rstd[rows]. fattrs: [eps].
  kLayerNorm = 16,
  /// Gradient of kLayerNorm. in: dy, x, mean, rstd, gamma; out: dx, dgamma, dbeta
  /// (dgamma and dbeta are overwritten, not accumulated).
  kLayerNormGrad = 17,
  /// Inverted dropout: y[i] = keep(i) ? x[i] / (1 - p) : 0, keep(i) = uniform(seed, step, key, i) >= p,
  /// where uniform() is the Philox generator of plan/philox.h. in: x; out: y.
  /// iattrs: [key]; fattrs: [p]. The same key, seed and step give the same mask: recompute is exact.
  kDropout = 18,
  /// dx[i] = keep(i) ? dy[i] / (1 - p) : 0 with the forward op's key. in: dy; out: dx.
  /// iattrs: [key]; fattrs: [p].
  kDropoutGrad = 19,
  /// out[..., :] = table[ids[...], :]. in: ids (i32), table [V, H]; out: [ids.shape..., H].
  /// An id outside [0, V) is a step error (REMAT_ERROR_OUT_OF_RANGE), not a crash.
  kEmbedding = 20,
  /// dtable = zeros; dtable[ids[j], :] += dy[j, :] in index order. in: dy, ids; out: dtable [V, H].
  kEmbeddingGrad = 21,
  /// General transpose. in: x; out: y (same numel, any shape).
  /// iattrs: [r, d_0..d_{r-1}, p_0..p_{r-1}]: x is viewed as dims d (row-major), y as dims
  /// (d_{p_0}, ..., d_{p_{r-1}}), and y[i_0, ..., i_{r-1}] = x[j] with j_{p_k} = i_k. r <= 6.
  kPermute = 22,
  /// y = x, bytes copied (a reshape: same numel, any shape). in: x; out: y.
  kCopy = 23,
  /// Select one index of an axis: x viewed as [outer, n, inner] where n = x.shape[axis];
  /// y[o, :] = x[o, index, :]. in: x; out: y (numel outer*inner). iattrs: [axis, index].
  kSelect = 24,
  /// dx = zeros shaped like the kSelect input; dx[o, index, :] = dy[o, :]. in: dy; out: dx.
  /// iattrs: [axis, index].
  kSelectGrad = 25,
  /// Mean softmax cross-entropy. in: logits [N, C], labels (i32) [N]; out: loss [1], probs [N, C].
  /// loss = -(1/N) sum_n log softmax(logits_n)[label_n]. A label outside [0, C) is a step error.
  kSoftmaxCrossEntropy = 26,
  /// dlogits = (probs - onehot(labels)) / N. in: probs, labels; out: dlogits.
  kSoftmaxCrossEntropyGrad = 27,
  /// loss = mean((pred - target)^2) over all elements. in: pred, target; out: loss [1].
  kMse = 28,
  /// dpred = 2 * (pred - target) / numel. in: pred, target; out: dpred.
  kMseGrad = 29,
  /// SGD as in torch.optim.SGD (dampening 0, not Nesterov), in place on param and velocity:
  ///   g = grad + weight_decay * param; v = momentum * v + g (if momentum != 0, else v unused);
  ///   param -= lr * (momentum != 0 ? v : g).
  /// in: param, grad[, velocity]; out: param[, velocity] (the same tensors: in place).
  /// fattrs: [lr, momentum, weight_decay].
  kSgdUpdate = 30,
  /// Adam / AdamW as in torch.optim.Adam / AdamW, in place, t = step + 1:
  ///   Adam:  g = grad + wd * param.     AdamW: param *= (1 - lr * wd), g = grad.
  ///   m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
  ///   param -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
  /// in: param, grad, m, v; out: param, m, v (in place). fattrs: [lr, b1, b2, eps, wd];
  /// iattrs: [decoupled] (1 = AdamW).
  kAdamUpdate = 31,
  /// Copy an arena tensor to its host spill slot; may complete asynchronously.
  /// in: x (arena); out: slot (host region, same size).
  kSpill = 32,
  /// Copy a host spill slot back into the arena; may complete asynchronously.
  /// in: slot (host region); out: x (arena, same size).
  kPrefetch = 33,
  /// Wait until the asynchronous copy that writes or reads in[0] has completed. in: x; out: none.
  kWait = 34,
  /// y = alpha * x. in: x; out: y. fattrs: [alpha].
  kScale = 35,
  kCount = 36,  ///< One past the last opcode; not an op.
};

/// Static facts about one opcode, used by the verifier and the compiler.
struct OpInfo {
  const char* name;       ///< Stable lower-case name, used in plans' text dumps and messages.
  uint8_t min_inputs;     ///< Fewest inputs the op takes.
  uint8_t max_inputs;     ///< Most inputs the op takes.
  uint8_t min_outputs;    ///< Fewest outputs.
  uint8_t max_outputs;    ///< Most outputs.
  uint8_t num_iattrs;     ///< Exact number of int attributes (0xff: variable, see kPermute).
  uint8_t num_fattrs;     ///< Exact number of float attributes.
};

/// Returns the table entry of |code|, or nullptr when |code| is not a valid opcode.
const OpInfo* op_info(uint16_t code);

/// Returns the name of |code|, or "unknown" when it is not a valid opcode.
const char* op_name(uint16_t code);

/// Looks an op up by its name; returns OpCode::kInvalid when no op has |name|.
OpCode op_by_name(const char* name);

}  // namespace remat

#endif  // REMAT_PLAN_OPS_H_
