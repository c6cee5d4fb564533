// Cases at the edges of the GPU kernels' work splits (backends/gpu/kernels/common.cl), so that
// every path of a split runs against the CPU kernels: row kernels give a row a team of
// gpu::row_team(n) work items (1 below n = 8, doubling up to the group size, 256 at most, from
// n = 1024), several rows to a group; column kernels give a group a tile of 32 columns and
// split the rows over 8 or more row lanes. Sizes sit below, at and past each of those edges,
// with row counts that leave a group part-filled.
#include "tests/backends/op_cases.h"

namespace remat_test {

using remat::OpCode;

namespace {

constexpr double kEw = 1e-5;

// [rows, n] pairs: team 1 with rows past a 256-item group; teams of 1 and 2 at n = 7, 8;
// teams of 16 and 32 across n = 128 with a part-filled group; teams of 128 and 256 across
// n = 1024; a full team with several elements per lane.
const int64_t kRowShapes[][2] = {{257, 7},  {9, 8},    {33, 127}, {33, 128}, {17, 129},
                                 {3, 1023}, {3, 1024}, {2, 1025}, {2, 3001}};

}  // namespace

std::vector<OpCase> tile_size_cases() {
  std::vector<OpCase> cases;
  for (const auto& s : kRowShapes) {
    const int64_t rows = s[0], n = s[1];
    cases.push_back({"softmax tile", OpCode::kSoftmax, {{rows, n}}, {{rows, n}}, {}, {}, kEw});
    cases.push_back({"softmax_grad tile",
                     OpCode::kSoftmaxGrad,
                     {{rows, n}, {rows, n}},
                     {{rows, n}},
                     {},
                     {},
                     kEw});
    cases.push_back(
        {"log_softmax tile", OpCode::kLogSoftmax, {{rows, n}}, {{rows, n}}, {}, {}, kEw});
    cases.push_back({"log_softmax_grad tile",
                     OpCode::kLogSoftmaxGrad,
                     {{rows, n}, {rows, n}},
                     {{rows, n}},
                     {},
                     {},
                     kEw});
    cases.push_back({"layernorm tile",
                     OpCode::kLayerNorm,
                     {{rows, n}, {n}, {n}},
                     {{rows, n}, {rows}, {rows}},
                     {},
                     {1e-5f},
                     kEw});
    cases.push_back({"layernorm_grad tile",
                     OpCode::kLayerNormGrad,
                     {{rows, n}, {rows, n}, {rows}, {rows}, {n}},
                     {{rows, n}, {n}, {n}},
                     {},
                     {},
                     kEw});
  }
  return cases;
}

}  // namespace remat_test
