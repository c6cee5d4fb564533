// What the fuzz targets feed a session: deterministic contents for every input and label.
#ifndef REMAT_TESTS_FUZZ_FUZZ_INPUTS_H_
#define REMAT_TESTS_FUZZ_FUZZ_INPUTS_H_

#include <stdint.h>
#include <string.h>

#include <vector>

#include "remat/remat.h"

// Deterministic contents for a binding: floats in [-1, 1]; integers in [0, 3) (every seed's
// label and token range holds them), with one element out of range when |out_of_range|.
inline void fill_binding(const remat_tensor_info& info, bool out_of_range,
                         std::vector<uint8_t>* out) {
  out->assign(info.bytes, 0);
  const size_t n = info.bytes / 4;
  for (size_t i = 0; i < n; ++i) {
    if (info.dtype == REMAT_DTYPE_I32) {
      int32_t v = static_cast<int32_t>(i % 3);
      if (out_of_range && i == n / 2) v = (i & 1) ? -1 : (1 << 20);
      memcpy(out->data() + 4 * i, &v, 4);
    } else {
      const float v = static_cast<float>(static_cast<int>(i % 9) - 4) / 4.0f;
      memcpy(out->data() + 4 * i, &v, 4);
    }
  }
}

// Sets every input and label binding of |plan| in |session| to fill_binding()'s contents;
// returns the first status set_input refused, or REMAT_OK.
inline remat_status set_every_binding(remat_session* session, const remat_plan* plan,
                                      bool out_of_range) {
  std::vector<uint8_t> bytes;
  for (int kind = REMAT_BINDING_INPUT; kind <= REMAT_BINDING_LABEL; ++kind) {
    uint32_t count = 0;
    remat_plan_binding_count(plan, static_cast<remat_binding_kind>(kind), &count);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      remat_plan_binding(plan, static_cast<remat_binding_kind>(kind), i, &info);
      fill_binding(info, out_of_range, &bytes);
      const remat_status status =
          remat_session_set_input(session, info.name, bytes.data(), bytes.size());
      if (status != REMAT_OK) return status;
    }
  }
  return REMAT_OK;
}

#endif  // REMAT_TESTS_FUZZ_FUZZ_INPUTS_H_
