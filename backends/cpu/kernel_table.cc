// Maps each opcode to its CPU kernel.
#include "backends/cpu/kernels.h"
#include "backends/cpu/kernels_internal.h"
#include "plan/ops.h"

namespace remat {
namespace cpu {
namespace {

// Indexed by opcode value: a designated slot per op keeps the table in step with OpCode.
struct KernelTable {
  Kernel k[static_cast<uint16_t>(OpCode::kCount)];
};

constexpr KernelTable make_table() {
  KernelTable t{};
  auto set = [&t](OpCode c, Kernel k) { t.k[static_cast<uint16_t>(c)] = k; };
  set(OpCode::kMatMul, matmul);
  set(OpCode::kBiasAdd, bias_add);
  set(OpCode::kReduceLeading, reduce_leading);
  set(OpCode::kAdd, add);
  set(OpCode::kMul, mul);
  set(OpCode::kRelu, relu);
  set(OpCode::kReluGrad, relu_grad);
  set(OpCode::kGelu, gelu);
  set(OpCode::kGeluGrad, gelu_grad);
  set(OpCode::kTanh, tanh_fwd);
  set(OpCode::kTanhGrad, tanh_grad);
  set(OpCode::kSigmoid, sigmoid);
  set(OpCode::kSigmoidGrad, sigmoid_grad);
  set(OpCode::kSoftmax, softmax);
  set(OpCode::kSoftmaxGrad, softmax_grad);
  set(OpCode::kLayerNorm, layernorm);
  set(OpCode::kLayerNormGrad, layernorm_grad);
  set(OpCode::kDropout, dropout);
  set(OpCode::kDropoutGrad, dropout_grad);
  set(OpCode::kEmbedding, embedding);
  set(OpCode::kEmbeddingGrad, embedding_grad);
  set(OpCode::kPermute, permute);
  set(OpCode::kCopy, copy);
  set(OpCode::kSelect, select);
  set(OpCode::kSelectGrad, select_grad);
  set(OpCode::kSoftmaxCrossEntropy, softmax_cross_entropy);
  set(OpCode::kSoftmaxCrossEntropyGrad, softmax_cross_entropy_grad);
  set(OpCode::kMse, mse);
  set(OpCode::kMseGrad, mse_grad);
  set(OpCode::kSgdUpdate, sgd_update);
  set(OpCode::kAdamUpdate, adam_update);
  set(OpCode::kSpill, spill);
  set(OpCode::kPrefetch, prefetch);
  set(OpCode::kWait, wait);
  set(OpCode::kScale, scale);
  return t;
}

constexpr KernelTable kTable = make_table();

}  // namespace

Kernel kernel_for(uint16_t code) {
  if (code >= static_cast<uint16_t>(OpCode::kCount)) return nullptr;
  return kTable.k[code];  // Slot 0 (kInvalid) stays nullptr.
}

}  // namespace cpu
}  // namespace remat
