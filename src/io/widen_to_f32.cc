// BF16 and F16 safetensors data widened to float32 with the plan's own conversions.
#include "io/widen_to_f32.h"

#include <cstring>

#include "plan/half_float.h"

namespace remat {

bool widens_to_f32(const std::string& dtype) { return dtype == "BF16" || dtype == "F16"; }

bool widen_to_f32(SafeTensor* t) {
  if (!widens_to_f32(t->dtype)) return false;
  const bool bf16 = t->dtype == "BF16";
  const size_t n = t->data.size() / 2;
  std::vector<uint8_t> wide(n * 4);
  for (size_t k = 0; k < n; ++k) {
    uint16_t h;
    std::memcpy(&h, t->data.data() + 2 * k, 2);
    const float x = bf16 ? bf16_to_f32(h) : f16_to_f32(h);
    std::memcpy(wide.data() + 4 * k, &x, 4);
  }
  t->data = std::move(wide);
  t->dtype = "F32";
  return true;
}

}  // namespace remat
