// The bench programs' STRATEGY/key=value arguments.
#include "bench/strategy_spec.h"

#include "io/errors.h"
#include "io/sizes.h"

namespace remat_bench {

void apply_strategy_spec(const std::string& spec, remat::compiler::CompileOptions* o) {
  o->strategy = spec.substr(0, spec.find('/'));
  for (size_t at = spec.find('/'); at != std::string::npos; at = spec.find('/', at + 1)) {
    const std::string item = spec.substr(at + 1, spec.find('/', at + 1) - at - 1);
    const std::string key = item.substr(0, item.find('='));
    if (key == "attention") {
      const std::string value = item.substr(item.find('=') + 1);
      if (!remat::compiler::parse_attention_kernel(value, &o->attention))
        throw remat::io::UsageError("attention '" + value + "': expected fused or unfused");
      continue;
    }
    if (key == "precision") {
      const std::string value = item.substr(item.find('=') + 1);
      if (!remat::compiler::parse_precision(value, &o->precision))
        throw remat::io::UsageError("precision '" + value + "': expected fp32, bf16 or fp16");
      continue;
    }
    if (key == "matmul") {
      const std::string value = item.substr(item.find('=') + 1);
      if (!remat::compiler::parse_matmul_precision(value, &o->matmul_precision))
        throw remat::io::UsageError("matmul precision '" + value + "': expected fp32 or tf32");
      continue;
    }
    const uint64_t bytes = remat::io::parse_size(item.substr(item.find('=') + 1), key);
    if (key == "arena" || key == "budget")
      o->arena_budget = bytes;  // budget=: its old name
    else if (key == "device")
      o->device_budget = bytes;
    else if (key == "host")
      o->host_budget = bytes;
    else
      throw remat::io::UsageError("unknown strategy option '" + key + "'");
  }
}

}  // namespace remat_bench
