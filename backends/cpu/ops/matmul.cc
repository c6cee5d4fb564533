// kMatMul: C = alpha * op(A) * op(B) in the batched, broadcast and reduce shape modes, and
// kHeadMatMul, attention's per-head products over interleaved heads, on the backend's threads.
// Each product is cut into tiles of C whose sizes the shapes alone fix, and the tiles of every
// product of the batch are shared out among the threads whole. The cut depends on the shapes
// only, never on the thread count, and every tile is summed over the whole K by one call, so the
// bits are those of one thread. A bias is added to each tile as soon as it is computed, while it
// is in cache, each element rounded once as bias_add rounds it. Products whose operands come in
// bfloat16 (a 16-bit plan's, on a CPU with AMX or AVX512-BF16: widening.h) run on bf16_gemm()
// in the same cut.
#include <algorithm>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/ops/work_splits.h"
#include "backends/cpu/parallel.h"

namespace remat {
namespace cpu {
namespace {

// The cut's constants (ops/work_splits.h).
constexpr int64_t kRowBlock = kMatmulRowBlock;
constexpr int64_t kColumnBlock = kMatmulColumnBlock;
constexpr int64_t kMinTiles = kMatmulMinTiles;
constexpr int64_t kMinBlock = kMatmulMinBlock;

// How one product is cut: into tiles of C of |rows| x |cols| (the last ones shorter).
struct Cut {
  int64_t rows, cols;
  int64_t row_blocks, col_blocks;
  int64_t count() const { return row_blocks * col_blocks; }
};

int64_t blocks_of(int64_t extent, int64_t size) { return (extent + size - 1) / size; }

// Half of |size|, rounded up to a multiple of 16 (the micro-kernels' widths divide it).
int64_t half_block(int64_t size) { return (size / 2 + 15) / 16 * 16; }

// Along C's rows when M is tall, else along its columns when N is wide, whole otherwise; then,
// while the op's |products| give fewer than kMinTiles tiles in all, the longer side of a tile
// is halved. Depends on the shapes only, never on the thread count.
template <typename G>
Cut cut_of(const G& g, int64_t products) {
  const int64_t m = g.m > 0 ? g.m : 1, n = g.n > 0 ? g.n : 1;
  Cut cut{m, n, 1, 1};
  if (m >= 2 * kRowBlock) {
    cut.rows = kRowBlock;
  } else if (n >= 2 * kColumnBlock) {
    cut.cols = kColumnBlock;
  }
  for (;;) {
    cut.row_blocks = blocks_of(m, cut.rows);
    cut.col_blocks = blocks_of(n, cut.cols);
    if (cut.count() * products >= kMinTiles) break;
    if (cut.rows >= cut.cols && cut.rows >= 2 * kMinBlock) {
      cut.rows = half_block(cut.rows);
    } else if (cut.cols >= 2 * kMinBlock) {
      cut.cols = half_block(cut.cols);
    } else {
      break;
    }
  }
  return cut;
}

// Tile |j| (row-major over the tiles) of |g| under |cut|, on thread |worker|'s packing scratch;
// then |bias| (null: none; else N floats) added to each of the tile's rows.
void run_gemm(const Gemm& g) { gemm(g); }
#if REMAT_CPU_BF16_GEMM
void run_gemm(const Bf16Gemm& g) { bf16_gemm(g); }
#endif

template <typename G>
void gemm_block(G g, const Cut& cut, int64_t j, const KernelArgs& a, uint32_t worker,
                const float* bias = nullptr) {
  const int64_t row = j / cut.col_blocks * cut.rows, col = j % cut.col_blocks * cut.cols;
  g.m = std::min(cut.rows, g.m - row);
  g.a = g.trans_a ? g.a + row : g.a + row * g.lda;
  g.n = std::min(cut.cols, g.n - col);
  g.b = g.trans_b ? g.b + col * g.ldb : g.b + col;
  g.c += row * g.ldc + col;
  g.pack = gemm_pack(a, worker);
  run_gemm(g);
  if (bias == nullptr) return;
  const float* __restrict b = bias + col;
  for (int64_t i = 0; i < g.m; ++i) {
    float* __restrict c = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) c[j] += b[j];
  }
}

// The GEMM of |call|'s sizes and row lengths: alpha its attribute, beta 0, operands unset.
template <typename G>
G gemm_of(const OpCall& call, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          int64_t lda, int64_t ldb, int64_t ldc) {
  G g{};
  g.trans_a = trans_a;
  g.trans_b = trans_b;
  g.m = m;
  g.k = k;
  g.n = n;
  g.alpha = fattr(call, attr::matmul::alpha);
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.beta = 0.0f;
  return g;
}

// Independent products of |g|'s sizes, every tile of each a work item: |place|(i, &part) points
// |part| at product i's matrices; |bias| (null: none) is added to each.
template <typename G, typename Place>
void products_threads(const KernelArgs& args, const G& g, int64_t products, const Place& place,
                      const float* bias) {
  const Cut cut = cut_of(g, products);
  parallel_for(args, products * cut.count(), 1, [&](int64_t begin, int64_t end, uint32_t worker) {
    for (int64_t item = begin; item < end; ++item) {
      G part = g;
      place(item / cut.count(), &part);
      gemm_block(part, cut, item % cut.count(), args, worker, bias);
    }
  });
}

// Every tile of one product over the threads.
template <typename G>
void gemm_threads(const KernelArgs& a, const G& g, const float* bias) {
  const Cut cut = cut_of(g, 1);
  parallel_for(a, cut.count(), 1, [&](int64_t begin, int64_t end, uint32_t worker) {
    for (int64_t j = begin; j < end; ++j) gemm_block(g, cut, j, a, worker, bias);
  });
}

// matmul on G (Gemm, or Bf16Gemm), its operands |a| and |b| of G's element type.
template <typename G, typename T>
remat_status matmul_on(const KernelArgs& args, const T* a, const T* b) {
  const MatmulShape shape = matmul_shape(*args.call);
  G g = gemm_of<G>(*args.call, shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k,
                   shape.a_cols, shape.b_cols, shape.n);
  const float* bias = args.call->num_inputs > 2 ? in_f32(args, 2) : nullptr;  // not in reduce mode
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
      gemm_threads(args, g, nullptr);
      return REMAT_OK;
    }
    // Each tile of C sums the batch in order, on one thread.
    const Cut cut = cut_of(g, 1);
    parallel_for(args, cut.count(), 1, [&](int64_t begin, int64_t end, uint32_t worker) {
      for (int64_t j = begin; j < end; ++j) {
        for (int64_t i = 0; i < batch_a; ++i) {
          G part = g;
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
    gemm_threads(args, g, bias);
    return REMAT_OK;
  }
  // Independent products (an imported attention's per-head ones).
  const bool shared_b = shape.mode == MatmulMode::kBroadcast;
  products_threads(
      args, g, batch_a,
      [&](int64_t i, G* part) {
        part->a = a + i * a_stride;
        part->b = shared_b ? b : b + i * b_stride;
        part->c = c + i * c_stride;
      },
      bias);
  return REMAT_OK;
}

// Attention's per-head products (plan/head_matmul_shape.h): each product's matrices sit at their
// head's offset with their tensor's row length, and every tile of each is a work item, as in
// the batched mode; a product's bits are matmul's for the same matrices.
template <typename G, typename T>
remat_status head_matmul_on(const KernelArgs& args, const T* a, const T* b) {
  const HeadMatmulShape shape = head_matmul_shape(*args.call);
  const G g = gemm_of<G>(*args.call, shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k,
                         shape.a.ld, shape.b.ld, shape.c.ld);
  float* c = out_f32(args, 0);
  const int64_t heads = shape.heads;
  products_threads(
      args, g, shape.c.products,
      [&](int64_t i, G* part) {
        part->a = a + shape.a.offset(i, heads);
        part->b = b + shape.b.offset(i, heads);
        part->c = c + shape.c.offset(i, heads);
      },
      nullptr);
  return REMAT_OK;
}

#if REMAT_CPU_BF16_GEMM
// Whether |args|' operands come in bfloat16 (the native path: widening.cc leaves them so).
bool bf16_operands(const KernelArgs& args) {
  return in_ref(args, 0).dtype == REMAT_DTYPE_BF16 && in_ref(args, 1).dtype == REMAT_DTYPE_BF16;
}

const uint16_t* in_bf16(const KernelArgs& a, int i) {
  return static_cast<const uint16_t*>(a.in[i]);
}
#endif

}  // namespace

// Builds without the bfloat16 engines (the firmware's among them) never see bfloat16 operands:
// no code for them.
remat_status matmul(const KernelArgs& args) {
#if REMAT_CPU_BF16_GEMM
  if (bf16_operands(args)) return matmul_on<Bf16Gemm>(args, in_bf16(args, 0), in_bf16(args, 1));
#endif
  return matmul_on<Gemm>(args, in_f32(args, 0), in_f32(args, 1));
}

remat_status head_matmul(const KernelArgs& args) {
#if REMAT_CPU_BF16_GEMM
  if (bf16_operands(args)) {
    return head_matmul_on<Bf16Gemm>(args, in_bf16(args, 0), in_bf16(args, 1));
  }
#endif
  return head_matmul_on<Gemm>(args, in_f32(args, 0), in_f32(args, 1));
}

}  // namespace cpu
}  // namespace remat
