// Maps each opcode to its CUDA launcher (matmul and the copy ops are run by the backend).
#include "backends/cuda/cuda_kernels.h"
#include "plan/ops.h"

namespace remat {
namespace cuda {
namespace {

struct KernelTable {
  Kernel k[kOpCodeCount];
};

constexpr KernelTable make_table() {
  KernelTable t{};
  auto set = [&t](OpCode c, Kernel k) { t.k[static_cast<uint16_t>(c)] = k; };
  set(OpCode::kBiasAdd, bias_add);
  set(OpCode::kReduceLeading, reduce_leading);
  set(OpCode::kAdd, add);
  set(OpCode::kMul, mul);
  set(OpCode::kRelu, relu);
  set(OpCode::kReluGrad, relu_grad);
  set(OpCode::kGelu, gelu);
  set(OpCode::kGeluGrad, gelu_grad);
  set(OpCode::kTanh, tanh);
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
  set(OpCode::kScale, scale);
  return t;
}

constexpr KernelTable kTable = make_table();

}  // namespace

Kernel kernel_for(uint16_t code) {
  if (code >= kOpCodeCount) return nullptr;
  return kTable.k[code];
}

remat_status check_cuda(const KernelArgs& a, cudaError_t status, const char* what) {
  if (status == cudaSuccess) return REMAT_OK;
  return set_error(a.err, REMAT_ERROR_INTERNAL, "op %u (%s): %s failed: %s (%s)", a.call->index,
                   op_name(a.call->code), what, cudaGetErrorName(status),
                   cudaGetErrorString(status));
}

}  // namespace cuda
}  // namespace remat
