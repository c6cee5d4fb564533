// The scratch the GPU backends' ops take beside the arena, at the end of the same device buffer
// as their widening workspace (backends/gpu/ops/ops.h: scratch_bytes): fused attention's scores,
// a chunk of (batch entry, head) pairs at a time, the partial column sums of reduce_leading
// and of layer norm's gradient, and the convolutions' column matrices, a chunk of images at a
// time. Here, beside the op catalogue, so that the compiler counts it in
// a GPU plan's workspace and device budgets with the backends' own arithmetic
// (compiler/precision.h: workspace_bytes).
#ifndef REMAT_PLAN_GPU_SCRATCH_H_
#define REMAT_PLAN_GPU_SCRATCH_H_

#include <stdint.h>

#include "plan/spatial_shape.h"

namespace remat {

/// The most floats of [Sq, Sk] scores the attention ops hold at once: a chunk of entries'
/// matrices, one an entry in attention and two in attention_grad, at least one entry's whatever
/// this says (16 MiB).
constexpr int64_t kGpuAttentionScratchFloats = int64_t{1} << 22;

/// Rows per block of the blocked column sums at least: each block of rows sums its columns into
/// a partial row, then the partials are added in block order, so that a tall matrix with few
/// columns (a layer's 768 or 1024) still fills a GPU.
constexpr int64_t kGpuColumnBlockRows = 256;

/// Blocks a blocked column sum takes at most: past kGpuColumnBlockRows times this many rows the
/// blocks grow instead, so that the partials stay this many rows (4 MiB for 4096 columns).
constexpr int64_t kGpuMaxColumnBlocks = 256;

/// The most floats of column matrices (and, for a weight gradient, of dy's rows) a GPU
/// convolution of one group holds at once (backends/gpu/ops/conv.cc): a chunk of images' (16 MiB).
constexpr int64_t kGpuConvScratchFloats = int64_t{1} << 22;

/// Whether GPU convolution |c| is pointwise: one group, a 1x1 filter, stride 1 and no padding, so
/// that each image [C, H W] is its own column matrix [C R S, P Q]: conv and conv_grad_input
/// multiply x and write dx in place, without scratch (conv_grad_weight still lays a chunk's
/// images side by side).
inline bool gpu_conv_pointwise(const ConvShape& c) {
  return c.a.groups == 1 && conv_is_pointwise(c);
}

/// Floats one image takes in GPU convolution |c|'s scratch: its column matrix, C R S by P Q
/// output positions, and for a weight gradient (|grad_weight|) dy's K rows of them too; 0 where
/// the convolution takes none: a pointwise conv or conv_grad_input (gpu_conv_pointwise), and
/// one run as direct loops instead, a grouped one or one whose image alone would take more than
/// kGpuConvScratchFloats.
inline int64_t gpu_conv_image_floats(const ConvShape& c, bool grad_weight) {
  if (c.a.groups != 1 || (gpu_conv_pointwise(c) && !grad_weight)) return 0;
  const int64_t floats = (c.cg * c.r * c.s + (grad_weight ? c.k : 0)) * c.p * c.q;
  return floats <= kGpuConvScratchFloats ? floats : 0;
}

/// Images of |images| a GPU convolution takes a chunk of at a time when one takes |image_floats|
/// (gpu_conv_image_floats, not 0): as many as kGpuConvScratchFloats hold, at most all.
inline int64_t gpu_conv_chunk_images(int64_t images, int64_t image_floats) {
  const int64_t fit = image_floats > 0 ? kGpuConvScratchFloats / image_floats : images;
  return fit < images ? fit : images;
}

/// Bytes of scratch such a convolution over |images| images holds: a chunk's.
inline uint64_t gpu_conv_scratch_bytes(int64_t images, int64_t image_floats) {
  if (image_floats == 0 || images == 0) return 0;
  return static_cast<uint64_t>(gpu_conv_chunk_images(images, image_floats) * image_floats) *
         sizeof(float);
}

/// How the attention ops walk their (batch entry, head) pairs: in chunks of up to |per_chunk|
/// entries along one dimension (heads of one batch entry, or batch entries of one head), the
/// other outside.
struct GpuAttentionChunking {
  bool batch_inner;   ///< A chunk's entries are batch entries of one head.
  int64_t per_chunk;  ///< Entries a chunk at most.
  int64_t inner;      ///< Entries along the chunked dimension.
  int64_t outer;      ///< Entries along the other.
};

/// The chunking of attention (|matrices| 1) or attention_grad (2) over |batch| x |heads| entries
/// of [|sq|, |sk|] scores: as many entries a chunk as kGpuAttentionScratchFloats hold, at least
/// one, along the dimension that needs fewer chunks (fewer launches: 32 batch entries of 4 heads
/// at seq 128 go in 4 chunks, not 32).
inline GpuAttentionChunking gpu_attention_chunking(int64_t batch, int64_t heads, int64_t sq,
                                                   int64_t sk, int64_t matrices) {
  const int64_t per_entry = sq * sk * matrices;
  int64_t fit = per_entry > 0 ? kGpuAttentionScratchFloats / per_entry : 1;
  if (fit < 1) fit = 1;
  const GpuAttentionChunking by_heads{false, fit < heads ? fit : heads, heads, batch};
  const GpuAttentionChunking by_batch{true, fit < batch ? fit : batch, batch, heads};
  auto chunks = [](const GpuAttentionChunking& c) {
    return c.per_chunk > 0 ? c.outer * ((c.inner + c.per_chunk - 1) / c.per_chunk) : 0;
  };
  return chunks(by_batch) < chunks(by_heads) ? by_batch : by_heads;
}

/// Bytes of scores an attention op's chunk holds: per_chunk entries of |matrices| [sq, sk]
/// float matrices.
inline uint64_t gpu_attention_scratch_bytes(int64_t batch, int64_t heads, int64_t sq, int64_t sk,
                                            int64_t matrices) {
  const GpuAttentionChunking c = gpu_attention_chunking(batch, heads, sq, sk, matrices);
  return static_cast<uint64_t>(c.per_chunk * sq * sk * matrices) * sizeof(float);
}

/// Rows per block of a blocked column sum over |rows| rows: kGpuColumnBlockRows, or as many as
/// spread them over kGpuMaxColumnBlocks blocks.
inline int64_t gpu_column_block_rows(int64_t rows) {
  const int64_t spread = (rows + kGpuMaxColumnBlocks - 1) / kGpuMaxColumnBlocks;
  return spread > kGpuColumnBlockRows ? spread : kGpuColumnBlockRows;
}

/// Blocks of gpu_column_block_rows() rows of a blocked column sum over |rows| rows.
inline int64_t gpu_column_blocks(int64_t rows) {
  const int64_t block = gpu_column_block_rows(rows);
  return (rows + block - 1) / block;
}

/// Bytes of partial sums a blocked column sum over |rows| rows of |columns| columns holds:
/// |sets| rows of partials (layer norm's gradient 2: dgamma and dbeta; reduce_leading 1) for
/// each of its gpu_column_blocks().
inline uint64_t gpu_column_sums_scratch_bytes(int64_t rows, int64_t columns, int64_t sets) {
  return static_cast<uint64_t>(sets * gpu_column_blocks(rows) * columns) * sizeof(float);
}

}  // namespace remat

#endif  // REMAT_PLAN_GPU_SCRATCH_H_
