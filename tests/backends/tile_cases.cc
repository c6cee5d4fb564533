// Cases at the edges of the GPU kernels' work splits (backends/gpu/kernels/common.cl), so that
// every path of a split runs against the CPU kernels: row kernels give a row a team of
// gpu::row_team(n) work items (1 below n = 8, doubling while a lane keeps 8 elements, up to the
// group size G = REMAT_GPU_GROUP_SIZE from n = 4 G), several rows to a group (cross-entropy's
// loss: the teams of one group take the rows in turns); column kernels give a group a tile of
// T = REMAT_GPU_TILE_WIDTH columns and split the rows over G / T row lanes; per-channel kernels
// give a channel a team of gpu::row_team(images * inner) work items walking its images'
// planes; embedding_grad splits the vocabulary into ranges for about 64K work items
// (ops/data.cc). Sizes sit below, at and past each of those edges, from the constants of
// backends/gpu/abi.h (so a changed constant moves them), with row counts that leave a group
// part-filled.
#include <math.h>

#include "backends/gpu/abi.h"
#include "plan/gpu_scratch.h"
#include "tests/backends/op_cases.h"

namespace remat_test {

using remat::OpCode;

namespace {

constexpr double kEw = 1e-5, kMm = 1e-4;
constexpr int64_t G = REMAT_GPU_GROUP_SIZE, T = REMAT_GPU_TILE_WIDTH;
// The row length from which a row's team is the whole group (row_team: 8 elements a lane at
// least, teams of powers of two up to G).
constexpr int64_t kFullTeam = 4 * G;

// [rows, n] pairs: team 1 with rows past a group; teams of 1 and 2 at n = 7, 8; teams of 16 and
// 32 across n = 128 with a part-filled group; teams of G / 2 and G across kFullTeam; a full team
// with several elements per lane.
const int64_t kRowShapes[][2] = {{G + 1, 7},
                                 {9, 8},
                                 {33, 127},
                                 {33, 128},
                                 {17, 129},
                                 {3, kFullTeam - 1},
                                 {3, kFullTeam},
                                 {2, kFullTeam + 1},
                                 {2, 3 * kFullTeam - 71}};

// [images, channels, inner] of the per-channel sums (conv's bias gradient channel_sum, batch
// norm's statistics and gradient); a channel's team is row_team(images * inner): 1 at one
// element and at 7; 1 and 4 with channels past a group; 2 at 8 and at 14 (a lane's walk wraps
// into the next image); 32 over inner 1 and 7 (a step of several images) and over 129; G / 2
// below kFullTeam elements; G at kFullTeam + 1 and over three images of it.
const int64_t kChannelShapes[][3] = {{1, 5, 1},
                                     {3, G + 44, 1},
                                     {1, 4, 7},
                                     {1, 4, 8},
                                     {2, 3, 7},
                                     {2, 70, 8},
                                     {G + 1, 3, 1},
                                     {40, 3, 7},
                                     {3, 5, 129},
                                     {1, 2, kFullTeam - 1},
                                     {1, 3, kFullTeam + 1},
                                     {3, 5, kFullTeam + 1}};

// (count, h, vocab) of embedding_grad: vocabulary ranges of 1 id (h = 1, and vocab 1), of 2 and
// 3 ids with a short last range, h across T and G.
const int64_t kEmbeddingShapes[][3] = {{5, 1, 13},        {40, T - 1, 5000}, {40, T, 2049},
                                       {40, T + 1, 1987}, {24, G - 1, 300},  {24, G, 257},
                                       {24, G + 1, 600},  {6, 300, 1}};

// |count| ids in [0, vocab) that repeat, at the vocabulary's ends, its middle and scattered.
std::vector<int32_t> embedding_ids(int64_t count, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    const int64_t pick[] = {0, vocab - 1, vocab / 2, 1 % vocab, (j * 7919 + 13) % vocab};
    ids[static_cast<size_t>(j)] = static_cast<int32_t>(pick[j % 5]);
  }
  return ids;
}

// [rows, c] of cross-entropy and its gradient, across the teams of one group.
const int64_t kLossShapes[][2] = {{G + 1, 7},     {G + 1, 8},         {33, 128},
                                  {3, kFullTeam}, {3, kFullTeam + 1}, {5, 1}};

// [outer, n, inner] of reduce_sum: inner 1 at team edges (n = 7, 8, 128, kFullTeam and one past)
// with a part-filled group; inner around T (one tile short, one tile, one tile and a column) and
// small (tiles spanning several outer indices).
const int64_t kSumShapes[][3] = {
    {G + 1, 7, 1},         {9, 8, 1},   {33, 128, 1},      {3, kFullTeam, 1},
    {2, kFullTeam + 1, 1}, {1, 1, 1},   {3, G + 1, T - 1}, {2, 9, T},
    {5, 8, T + 1},         {7, 300, 2}, {1, 1, 2},         {40, 3, 3}};

// Fused attention (ops/attention.cc, kernels/attention.cl): (batch, Sq, Sk, heads, D, Dv, mask,
// p percent). The products run a chunk of heads at a time, as many as
// remat::kGpuAttentionScratchFloats floats of [Sq, Sk] scores hold (one matrix a head forward,
// two backward), of heads of one batch entry or of batch entries of one head, whichever needs
// fewer chunks; the softmax rows between them take a team of row_team(Sk) work items. Sk at
// team edges (1, 2, 7, 8, 31 .. 33, 255 .. 257, 1024); Sq and Sk of kChunkSide = 1024 give 4
// entries a chunk forward and 2 backward, so 5 heads (or 5 batch entries of one head) run in
// chunks of 4 + 1 and 2 + 2 + 1; batch entries of one head also with a [B, Sq, Sk] mask;
// kOneHeadSide makes one head's scores alone pass the bound (a chunk of one head); these two
// have no mask, which would not fit the tests' 4 MiB arena. D and Dv of 1,
// 3, 64 and 65, Dv != D; mask 0: none, 1: [Sq, Sk], 2: [B, Sq, Sk] (both with -inf entries:
// op_cases.cc); dropout 0 and 10%.
const int64_t kChunkSide =
    static_cast<int64_t>(sqrt(static_cast<double>(remat::kGpuAttentionScratchFloats) / 4));
const int64_t kOneHeadSide =
    static_cast<int64_t>(sqrt(static_cast<double>(remat::kGpuAttentionScratchFloats))) + 4;
const int64_t kAttentionShapes[][8] = {{1, 1, 1, 1, 1, 1, 0, 0},
                                       {2, 3, 5, 2, 3, 2, 2, 10},
                                       {1, 31, 32, 1, 64, 64, 1, 0},
                                       {1, 33, 33, 2, 65, 7, 1, 10},
                                       {2, 257, 31, 1, 4, 33, 2, 10},
                                       {1, 256, 65, 3, 1, 1, 0, 0},
                                       {1, 17, 257, 1, 8, 3, 1, 0},
                                       {1, 5, 256, 2, 32, 32, 2, 10},
                                       {1, 255, 2, 1, 3, 65, 0, 10},
                                       {2, 64, 64, 4, 64, 64, 1, 10},
                                       {1, 40, 70, 2, 33, 31, 2, 0},
                                       {1, 9, 8, 3, 2, 2, 1, 0},
                                       {1, 3, 1024, 2, 4, 4, 2, 10},
                                       {1, kChunkSide, kChunkSide, 5, 4, 3, 0, 10},
                                       {5, kChunkSide, kChunkSide, 1, 4, 3, 0, 10},
                                       {3, 9, 8, 2, 2, 3, 2, 10},
                                       {1, kOneHeadSide, kOneHeadSide, 2, 2, 2, 0, 0}};

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
  // layernorm_grad's dgamma and dbeta sum blocks of kGpuColumnBlockRows rows (plan/gpu_scratch.h):
  // one block short, full and one row past, two blocks and one past; columns around a 32-column
  // tile. Past kGpuMaxColumnBlocks blocks of that many rows, the blocks grow: at that edge and
  // one row past it (blocks of 257 rows), and for reduce_leading (the same blocked sums) also
  // twice past it (blocks of 513 rows, the last one short).
  constexpr int64_t kBlock = remat::kGpuColumnBlockRows;
  constexpr int64_t kMostRows = remat::kGpuColumnBlockRows * remat::kGpuMaxColumnBlocks;
  for (const int64_t rows : {kMostRows, kMostRows + 1, 2 * kMostRows + 5}) {
    if (rows <= kMostRows + 1) {
      cases.push_back({"layernorm_grad grown blocks",
                       OpCode::kLayerNormGrad,
                       {{rows, 2}, {rows, 2}, {rows}, {rows}, {2}},
                       {{rows, 2}, {2}, {2}},
                       {},
                       {},
                       kEw});
    }
    cases.push_back(
        {"reduce_leading grown blocks", OpCode::kReduceLeading, {{rows, 3}}, {{3}}, {}, {}, kEw});
  }
  for (const int64_t rows : {kBlock - 1, kBlock, kBlock + 1, 2 * kBlock, 2 * kBlock + 1}) {
    for (const int64_t n : {int64_t{7}, int64_t{33}, int64_t{64}}) {
      cases.push_back({"layernorm_grad block tile",
                       OpCode::kLayerNormGrad,
                       {{rows, n}, {rows, n}, {rows}, {rows}, {n}},
                       {{rows, n}, {n}, {n}},
                       {},
                       {},
                       kEw});
    }
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

  // Cross-entropy: one group of teams (row_team(c): 1 at c = 7, 2 at 8, 16 at 128, 128 at 1024,
  // the group from 1025), each team taking every teams-th row; the row counts leave the last
  // round of rows part-filled. Its gradient: a team per row over many groups. Labels cover
  // 0 .. c - 1, both ends included.
  for (const auto& s : kLossShapes) {
    const int64_t rows = s[0], c = s[1];
    std::vector<int32_t> labels(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      labels[static_cast<size_t>(r)] = static_cast<int32_t>(r % 2 == 0 ? r % c : c - 1 - r % c);
    }
    cases.push_back({"softmax_cross_entropy tile",
                     OpCode::kSoftmaxCrossEntropy,
                     {{rows, c}, {rows}},
                     {{1}, {rows, c}},
                     {},
                     {},
                     kEw,
                     {labels}});
    cases.push_back({"softmax_cross_entropy_grad tile",
                     OpCode::kSoftmaxCrossEntropyGrad,
                     {{rows, c}, {rows}},
                     {{rows, c}},
                     {},
                     {},
                     kEw,
                     {labels}});
  }

  // reduce_leading (bias gradients), the product ones[1, rows] dy on the backend's BLAS: one
  // row or column, and around the 32-column tiles and 256-item groups of the BLAS kernels.
  for (const int64_t columns : {1, 31, 32, 33, 300}) {
    for (const int64_t rows : {1, 7, 8, 9, 257}) {
      cases.push_back({"reduce_leading tile",
                       OpCode::kReduceLeading,
                       {{rows, columns}},
                       {{columns}},
                       {},
                       {},
                       kEw});
    }
  }

  // reduce_sum over x viewed as [outer, n, inner] (attributes: axis 1, one axis, mean): rows
  // with a team each where inner is 1, column tiles over the outer * inner outputs otherwise.
  for (const auto& s : kSumShapes) {
    const int64_t outer = s[0], n = s[1], inner = s[2];
    for (const int64_t mean : {0, 1}) {
      if (inner == 1) {
        cases.push_back({"reduce_sum rows tile",
                         OpCode::kReduceSum,
                         {{outer, n}},
                         {{outer, 1}},
                         {1, 1, mean},
                         {},
                         kEw});
      } else {
        cases.push_back({"reduce_sum columns tile",
                         OpCode::kReduceSum,
                         {{outer, n, inner}},
                         {{outer, inner}},
                         {1, 1, mean},
                         {},
                         kEw});
      }
    }
  }
  // attention and its gradient; scale 1/sqrt(D) as a transformer's (1 where D is 1).
  for (const auto& s : kAttentionShapes) {
    const int64_t b = s[0], sq = s[1], sk = s[2], heads = s[3], d = s[4], dv = s[5];
    const float scale = 1.0f / sqrtf(static_cast<float>(d)), p = static_cast<float>(s[7]) / 100;
    std::vector<std::vector<int64_t>> in = {
        {b, sq, heads * d}, {b, sk, heads * d}, {b, sk, heads * dv}};
    if (s[6] == 1) in.push_back({sq, sk});
    if (s[6] == 2) in.push_back({b, sq, sk});
    const std::vector<int64_t> context = {b, sq, heads * dv}, lse = {b, heads, sq};
    cases.push_back(
        {"attention tile", OpCode::kAttention, in, {context, lse}, {heads, 7}, {scale, p}, kMm});
    std::vector<std::vector<int64_t>> grad_in = {context, in[0], in[1], in[2], context, lse};
    if (s[6] != 0) grad_in.push_back(in[3]);
    cases.push_back({"attention_grad tile",
                     OpCode::kAttentionGrad,
                     grad_in,
                     {in[0], in[1], in[2]},
                     {heads, 7},
                     {scale, p},
                     kMm});
  }
  return cases;
}

}  // namespace remat_test
