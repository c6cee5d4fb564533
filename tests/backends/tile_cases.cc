// Cases at the edges of the GPU kernels' work splits (backends/gpu/kernels/common.cl), so that
// every path of a split runs against the CPU kernels: row kernels give a row a team of
// gpu::row_team(n) work items (1 below n = 8, doubling up to the group size, 256 at most, from
// n = 1024), several rows to a group; column kernels give a group a tile of 32 columns and
// split the rows over 8 or more row lanes; per-channel kernels give a channel a team of
// gpu::row_team(images * inner) work items walking its images' planes; embedding_grad splits
// the vocabulary into ranges for about 64K work items (ops/data.cc). Sizes sit below, at and
// past each of those edges, with row counts that leave a group part-filled.
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

// [images, channels, inner] of the per-channel sums (conv's bias gradient channel_sum, batch
// norm's statistics and gradient); a channel's team is row_team(images * inner): 1 at one
// element and at 7; 1 and 4 with channels past a 256-item group; 2 at 8 and at 14 (a lane's
// walk wraps into the next image); 32 over inner 1 and 7 (a step of several images) and over
// 129; 128 below 1024 elements; 256 at 1025 and over three images of 1025.
const int64_t kChannelShapes[][3] = {{1, 5, 1},   {3, 300, 1},  {1, 4, 7},    {1, 4, 8},
                                     {2, 3, 7},   {2, 70, 8},   {257, 3, 1},  {40, 3, 7},
                                     {3, 5, 129}, {1, 2, 1023}, {1, 3, 1025}, {3, 5, 1025}};

// (count, h, vocab) of embedding_grad: vocabulary ranges of 1 id (h = 1, and vocab 1), of 2 and
// 3 ids with a short last range, h across 32 and 256.
const int64_t kEmbeddingShapes[][3] = {{5, 1, 13},     {40, 31, 5000}, {40, 32, 2049},
                                       {40, 33, 1987}, {24, 255, 300}, {24, 256, 257},
                                       {24, 257, 600}, {6, 300, 1}};

// |count| ids in [0, vocab) that repeat, at the vocabulary's ends, its middle and scattered.
std::vector<int32_t> embedding_ids(int64_t count, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    const int64_t pick[] = {0, vocab - 1, vocab / 2, 1 % vocab, (j * 7919 + 13) % vocab};
    ids[static_cast<size_t>(j)] = static_cast<int32_t>(pick[j % 5]);
  }
  return ids;
}

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

  // Per-channel sums over [images, channels, inner] (rank 2 where inner is 1, as after a
  // linear layer): a team per channel.
  for (const auto& s : kChannelShapes) {
    const int64_t images = s[0], channels = s[1], inner = s[2];
    const std::vector<int64_t> x = inner == 1 ? std::vector<int64_t>{images, channels}
                                              : std::vector<int64_t>{images, channels, inner};
    const std::vector<int64_t> c = {channels};
    cases.push_back({"channel_sum tile", OpCode::kChannelSum, {x}, {c}, {}, {}, kEw});
    cases.push_back(
        {"batch_norm tile", OpCode::kBatchNorm, {x, c, c}, {x, c, c}, {}, {1e-5f}, kEw});
    cases.push_back({"batch_norm_grad tile",
                     OpCode::kBatchNormGrad,
                     {x, x, c, c, c},
                     {x, c, c},
                     {},
                     {1e-5f},
                     kEw});
  }

  // embedding_grad, a work item per column and vocabulary range: bitwise the CPU's sums.
  for (const auto& s : kEmbeddingShapes) {
    const int64_t count = s[0], h = s[1], vocab = s[2];
    cases.push_back({"embedding_grad tile",
                     OpCode::kEmbeddingGrad,
                     {{count, h}, {count}},
                     {{vocab, h}},
                     {},
                     {},
                     0.0,
                     {embedding_ids(count, vocab)}});
  }
  return cases;
}

}  // namespace remat_test
