// kMatMul: C = alpha * op(A) * op(B) in the batched, broadcast and reduce shape modes, on the
// backend's threads. Each product is cut into blocks of C's rows (or columns) of a fixed size,
// and the blocks of every product of the batch are shared out among the threads whole. The cut
// depends on the shapes only, never on the thread count, and every block is summed over the
// whole K by one call, so the bits are those of one thread.
#include <algorithm>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"

namespace remat {
namespace cpu {
namespace {

// Rows (or columns) of C per block: large enough for the GEMM's own blocking to stay efficient.
constexpr int64_t kRowBlock = 256;
constexpr int64_t kColumnBlock = 256;

// How one product is cut: along C's rows when M is tall, else along its columns when N is wide.
struct Cut {
  bool rows;
  int64_t size, count;
};

Cut cut_of(const Gemm& g) {
  if (g.m >= 2 * kRowBlock) return {true, kRowBlock, (g.m + kRowBlock - 1) / kRowBlock};
  if (g.n >= 2 * kColumnBlock) return {false, kColumnBlock, (g.n + kColumnBlock - 1) / kColumnBlock};
  return {true, g.m > 0 ? g.m : 1, 1};
}

// Block |j| of |g| under |cut|, on thread |worker|'s packing scratch.
void gemm_block(Gemm g, const Cut& cut, int64_t j, const KernelArgs& a, uint32_t worker) {
  const int64_t begin = j * cut.size;
  if (cut.rows) {
    g.m = std::min(cut.size, g.m - begin);
    g.a = g.trans_a ? g.a + begin : g.a + begin * g.lda;
    g.c += begin * g.ldc;
  } else {
    g.n = std::min(cut.size, g.n - begin);
    g.b = g.trans_b ? g.b + begin * g.ldb : g.b + begin;
    g.c += begin;
  }
  g.pack = gemm_pack(a, worker);
  gemm(g);
}

// Every block of one product over the threads.
void gemm_threads(const KernelArgs& a, const Gemm& g) {
  const Cut cut = cut_of(g);
  parallel_for(a, cut.count, 1, [&](int64_t begin, int64_t end, uint32_t worker) {
    for (int64_t j = begin; j < end; ++j) gemm_block(g, cut, j, a, worker);
  });
}

}  // namespace

remat_status matmul(const KernelArgs& args) {
  const MatmulShape shape = matmul_shape(*args.call);
  Gemm g{};
  g.trans_a = shape.trans_a;
  g.trans_b = shape.trans_b;
  g.m = shape.m;
  g.k = shape.k;
  g.n = shape.n;
  g.alpha = fattr(*args.call, 0, 1.0f);
  g.lda = shape.a_cols;
  g.ldb = shape.b_cols;
  g.ldc = g.n;
  g.beta = 0.0f;
  const float* a = in_f32(args, 0);
  const float* b = in_f32(args, 1);
  float* c = out_f32(args, 0);
  const bool trans_a = shape.trans_a, trans_b = shape.trans_b;
  const int64_t batch_a = shape.batch_a;
  const int64_t a_stride = shape.a_rows * shape.a_cols, b_stride = shape.b_rows * shape.b_cols;
  const int64_t c_stride = g.m * g.n;

  if (shape.mode == MatmulMode::kReduce) {
    // Reduce mode (weight gradients): C = sum over the batch, in batch order for every element.
    g.c = c;
    if (trans_a && !trans_b) {
      // The stacked A^T and B are contiguous along K: one GEMM with K = batch * K.
      g.a = a;
      g.b = b;
      g.k *= batch_a;
      gemm_threads(args, g);
      return REMAT_OK;
    }
    // Each block of C sums the batch in order, on one thread.
    const Cut cut = cut_of(g);
    parallel_for(args, cut.count, 1, [&](int64_t begin, int64_t end, uint32_t worker) {
      for (int64_t j = begin; j < end; ++j) {
        for (int64_t i = 0; i < batch_a; ++i) {
          Gemm part = g;
          part.a = a + i * a_stride;
          part.b = b + i * b_stride;
          part.beta = i == 0 ? 0.0f : 1.0f;
          gemm_block(part, cut, j, args, worker);
        }
      }
    });
    return REMAT_OK;
  }
  if (shape.mode == MatmulMode::kBroadcast && !trans_a) {
    // Every batch entry shares B and the stacked A rows are one [batch * M, K] matrix: one GEMM.
    g.a = a;
    g.b = b;
    g.c = c;
    g.m *= batch_a;
    gemm_threads(args, g);
    return REMAT_OK;
  }
  // Independent products (attention's per-head ones), every block of each a work item.
  const bool shared_b = shape.mode == MatmulMode::kBroadcast;
  const Cut cut = cut_of(g);
  parallel_for(args, batch_a * cut.count, 1, [&](int64_t begin, int64_t end, uint32_t worker) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / cut.count;
      Gemm part = g;
      part.a = a + i * a_stride;
      part.b = shared_b ? b : b + i * b_stride;
      part.c = c + i * c_stride;
      gemm_block(part, cut, item % cut.count, args, worker);
    }
  });
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
