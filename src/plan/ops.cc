// The op table's static facts: names, arities and attribute counts.
#include "plan/ops.h"

#include <string.h>

namespace remat {
namespace {

constexpr uint8_t kVariable = 0xff;

// Indexed by opcode value; order must follow OpCode.
const OpInfo kOps[] = {
    {"invalid", 0, 0, 0, 0, 0, 0},
    {"matmul", 2, 2, 1, 1, 2, 1},
    {"bias_add", 2, 2, 1, 1, 0, 0},
    {"reduce_leading", 1, 1, 1, 1, 0, 0},
    {"add", 2, 2, 1, 1, 0, 0},
    {"mul", 2, 2, 1, 1, 0, 0},
    {"relu", 1, 1, 1, 1, 0, 0},
    {"relu_grad", 2, 2, 1, 1, 0, 0},
    {"gelu", 1, 1, 1, 1, 0, 0},
    {"gelu_grad", 2, 2, 1, 1, 0, 0},
    {"tanh", 1, 1, 1, 1, 0, 0},
    {"tanh_grad", 2, 2, 1, 1, 0, 0},
    {"sigmoid", 1, 1, 1, 1, 0, 0},
    {"sigmoid_grad", 2, 2, 1, 1, 0, 0},
    {"softmax", 1, 1, 1, 1, 0, 0},
    {"softmax_grad", 2, 2, 1, 1, 0, 0},
    {"layernorm", 3, 3, 3, 3, 0, 1},
    {"layernorm_grad", 5, 5, 3, 3, 0, 0},
    {"dropout", 1, 1, 1, 1, 1, 1},
    {"dropout_grad", 1, 1, 1, 1, 1, 1},
    {"embedding", 2, 2, 1, 1, 0, 0},
    {"embedding_grad", 2, 2, 1, 1, 0, 0},
    {"permute", 1, 1, 1, 1, kVariable, 0},
    {"copy", 1, 1, 1, 1, 0, 0},
    {"select", 1, 1, 1, 1, 2, 0},
    {"select_grad", 1, 1, 1, 1, 2, 0},
    {"softmax_cross_entropy", 2, 2, 2, 2, 0, 0},
    {"softmax_cross_entropy_grad", 2, 2, 1, 1, 0, 0},
    {"mse", 2, 2, 1, 1, 0, 0},
    {"mse_grad", 2, 2, 1, 1, 0, 0},
    {"sgd_update", 2, 3, 1, 2, 0, 3},
    {"adam_update", 4, 4, 3, 3, 1, 5},
    {"spill", 1, 1, 1, 1, 0, 0},
    {"prefetch", 1, 1, 1, 1, 0, 0},
    {"wait", 1, 1, 0, 0, 0, 0},
    {"scale", 1, 1, 1, 1, 0, 1},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(OpCode::kCount),
              "op table and OpCode disagree");

}  // namespace

const OpInfo* op_info(uint16_t code) {
  if (code == 0 || code >= static_cast<uint16_t>(OpCode::kCount)) return nullptr;
  return &kOps[code];
}

const char* op_name(uint16_t code) {
  const OpInfo* info = op_info(code);
  return info ? info->name : "unknown";
}

OpCode op_by_name(const char* name) {
  for (uint16_t c = 1; c < static_cast<uint16_t>(OpCode::kCount); ++c) {
    if (strcmp(kOps[c].name, name) == 0) return static_cast<OpCode>(c);
  }
  return OpCode::kInvalid;
}

}  // namespace remat
