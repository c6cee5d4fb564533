// Names of the attention kernels, as the CLI takes them.
#include "compiler/attention_kernel.h"

namespace remat {
namespace compiler {

const char* attention_kernel_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kFused: return "fused";
    case AttentionKernel::kUnfused: return "unfused";
  }
  return "?";
}

bool parse_attention_kernel(const std::string& text, AttentionKernel* out) {
  for (AttentionKernel k : {AttentionKernel::kFused, AttentionKernel::kUnfused}) {
    if (text == attention_kernel_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

}  // namespace compiler
}  // namespace remat
