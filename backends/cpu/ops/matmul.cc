// kMatMul: C = alpha * op(A) * op(B) in the batched, broadcast and reduce shape modes, and
// kHeadMatMul, attention's per-head products over interleaved heads, on the backend's threads.
// Each product is cut into tiles of C whose sizes the shapes alone fix, and the tiles of every
// product of the batch are shared out among the threads whole. The cut depends on the shapes
// only, never on the thread count, and every tile is summed over the whole K by one call, so the
// bits are those of one thread. A bias is added to each tile as soon as it is computed, while it
// is in cache, each element rounded once as bias_add rounds it. A 16-bit plan's products take
// their operands in 16 bits (widening.h: product_reads_16_bit), in the same cut: bfloat16 ones on
// bf16_gemm() where the CPU has AMX or AVX512-BF16, others on the packed engine, which widens
// them as it packs them (gemm/half_panels.h). A 16-bit C is summed a strip at a time in the
// thread's float32 strip (a tile's rows, parallel.h), its bias added, and rounded once: the bits of
// a float32 C rounded.
#include <algorithm>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/gemm/half_panels.h"
#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/ops/work_splits.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/widening.h"
#include "plan/half_float.h"

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

// A product on the packed engine whose operands are 16-bit floats of |dtype|, read through
// GemmPackers (gemm/half_panels.h); its fields as Gemm's.
struct PanelGemm {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha;
  const uint16_t* a;
  int64_t lda;
  const uint16_t* b;
  int64_t ldb;
  float beta;
  float* c;
  int64_t ldc;
  float* pack;
  uint8_t dtype;
};

void run_gemm(const Gemm& g) { gemm(g); }
#if REMAT_CPU_BF16_GEMM
void run_gemm(const Bf16Gemm& g) { bf16_gemm(g); }
#endif
void run_gemm(const PanelGemm& p) {
  const HalfOperand a{p.a, p.lda, !p.trans_a, p.dtype}, b{p.b, p.ldb, p.trans_b, p.dtype};
  Gemm g{};
  g.trans_a = p.trans_a;
  g.trans_b = p.trans_b;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.alpha = p.alpha;
  g.beta = p.beta;
  g.c = p.c;
  g.ldc = p.ldc;
  g.pack = p.pack;
  g.pack_a_with = half_packer(&a);
  g.pack_b_with = half_packer(&b);
  packed_gemm(g);
}

// Where a product's C goes: float32 |f32|, or |half|, 16-bit of |dtype|, summed a strip at a
// time in float32 (product_strip) and rounded once.
struct CTarget {
  float* f32;
  uint16_t* half;
  uint8_t dtype;
  CTarget at(int64_t offset) const {
    return {f32 != nullptr ? f32 + offset : nullptr, half != nullptr ? half + offset : nullptr,
            dtype};
  }
};

// |bias| (null: none; else n floats) added to each of the m rows of |c|.
void add_bias(float* c, int64_t ldc, int64_t m, int64_t n, const float* bias) {
  if (bias == nullptr) return;
  const float* __restrict b = bias;
  for (int64_t i = 0; i < m; ++i) {
    float* __restrict row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) row[j] += b[j];
  }
}

// |g| (beta 0: product_reads_16_bit leaves a reduce mode's 16-bit C, which sums onto itself,
// widened whole) into the 16-bit |c|, kProductStripRows x kProductStripCols at a time in thread
// |worker|'s strip, |bias| added to each strip's rows before they are rounded. Each engine sums
// an element of C in an order that depends on K alone, so the strips give the bits of the whole.
template <typename G>
void gemm_strips(const G& g, const CTarget& c, const KernelArgs& a, uint32_t worker,
                 const float* bias) {
  float* strip = product_strip(a, worker);
  for (int64_t r = 0; r < g.m; r += kProductStripRows) {
    for (int64_t s = 0; s < g.n; s += kProductStripCols) {
      G part = g;
      part.m = std::min(kProductStripRows, g.m - r);
      part.n = std::min(kProductStripCols, g.n - s);
      part.a = g.trans_a ? g.a + r : g.a + r * g.lda;
      part.b = g.trans_b ? g.b + s * g.ldb : g.b + s;
      part.c = strip;
      part.ldc = part.n;
      run_gemm(part);
      add_bias(strip, part.n, part.m, part.n, bias != nullptr ? bias + s : nullptr);
      for (int64_t i = 0; i < part.m; ++i)
        narrow_span(c.dtype, strip + i * part.n, c.half + (r + i) * g.ldc + s, part.n);
    }
  }
}

// Tile |j| (row-major over the tiles) of |g| under |cut| into |c|, on thread |worker|'s packing
// scratch; then |bias| (null: none; else N floats) added to each of the tile's rows.
template <typename G>
void gemm_block(G g, CTarget c, const Cut& cut, int64_t j, const KernelArgs& a, uint32_t worker,
                const float* bias = nullptr) {
  const int64_t row = j / cut.col_blocks * cut.rows, col = j % cut.col_blocks * cut.cols;
  g.m = std::min(cut.rows, g.m - row);
  g.a = g.trans_a ? g.a + row : g.a + row * g.lda;
  g.n = std::min(cut.cols, g.n - col);
  g.b = g.trans_b ? g.b + col * g.ldb : g.b + col;
  c = c.at(row * g.ldc + col);
  g.pack = gemm_pack(a, worker);
  if (kBuildHalfFloats && c.half != nullptr) {  // builds without 16-bit floats: no strips
    gemm_strips(g, c, a, worker, bias != nullptr ? bias + col : nullptr);
    return;
  }
  g.c = c.f32;
  run_gemm(g);
  add_bias(g.c, g.ldc, g.m, g.n, bias != nullptr ? bias + col : nullptr);
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

// Independent products of |g|'s sizes into |c|, every tile of each a work item: |place|(i,
// &part, &part_c) points |part| and |part_c| at product i's matrices; |bias| (null: none) is
// added to each.
template <typename G, typename Place>
void products_threads(const KernelArgs& args, const G& g, const CTarget& c, int64_t products,
                      const Place& place, const float* bias) {
  const Cut cut = cut_of(g, products);
  parallel_for(args, products * cut.count(), 1, [&](int64_t begin, int64_t end, uint32_t worker) {
    for (int64_t item = begin; item < end; ++item) {
      G part = g;
      CTarget part_c = c;
      place(item / cut.count(), &part, &part_c);
      gemm_block(part, part_c, cut, item % cut.count(), args, worker, bias);
    }
  });
}

// Every tile of one product into |c| over the threads.
template <typename G>
void gemm_threads(const KernelArgs& a, const G& g, const CTarget& c, const float* bias) {
  const Cut cut = cut_of(g, 1);
  parallel_for(a, cut.count(), 1, [&](int64_t begin, int64_t end, uint32_t worker) {
    for (int64_t j = begin; j < end; ++j) gemm_block(g, c, cut, j, a, worker, bias);
  });
}

// The dtype a PanelGemm converts from; the other engines take theirs as they are.
template <typename G>
void set_operand_dtype(G*, uint8_t) {}
void set_operand_dtype(PanelGemm* g, uint8_t dtype) { g->dtype = dtype; }

// |args|' output as a product writes it.
CTarget c_target(const KernelArgs& args) {
  const uint8_t dtype = args.call->outputs[0]->dtype;
  if (kBuildHalfFloats && is_half_float(dtype)) {
    return {nullptr, static_cast<uint16_t*>(args.out[0]), dtype};
  }
  return {out_f32(args, 0), nullptr, REMAT_DTYPE_F32};
}

// matmul on G (Gemm, Bf16Gemm or PanelGemm), its operands |a| and |b| of G's element type (16-bit
// ones of |dtype|).
template <typename G, typename T>
remat_status matmul_on(const KernelArgs& args, const T* a, const T* b, uint8_t dtype) {
  const MatmulShape shape = matmul_shape(*args.call);
  G g = gemm_of<G>(*args.call, shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k,
                   shape.a_cols, shape.b_cols, shape.n);
  set_operand_dtype(&g, dtype);
  if (args.accumulate) g.beta = 1.0f;  // C += the product (a later chunk of a sum)
  const float* bias = args.call->num_inputs > 2 ? in_f32(args, 2) : nullptr;  // not in reduce mode
  const CTarget c = c_target(args);
  const bool trans_a = shape.trans_a, trans_b = shape.trans_b;
  const int64_t batch_a = shape.batch_a;
  const int64_t a_stride = shape.a_rows * shape.a_cols, b_stride = shape.b_rows * shape.b_cols;
  const int64_t c_stride = g.m * g.n;

  if (shape.mode == MatmulMode::kReduce) {
    // Reduce mode (weight gradients): C = sum over the batch, in batch order for every element.
    // C is float32 (product_reads_16_bit widens a 16-bit one whole).
    if (trans_a && !trans_b) {
      // The stacked A^T and B are contiguous along K: one GEMM with K = batch * K.
      g.a = a;
      g.b = b;
      g.k *= batch_a;
      gemm_threads(args, g, c, nullptr);
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
          part.beta = i == 0 ? g.beta : 1.0f;
          gemm_block(part, c, cut, j, args, worker);
        }
      }
    });
    return REMAT_OK;
  }
  if (shape.mode == MatmulMode::kBroadcast && !trans_a) {
    // Every batch entry shares B and the stacked A rows are one [batch * M, K] matrix: one GEMM.
    g.a = a;
    g.b = b;
    g.m *= batch_a;
    gemm_threads(args, g, c, bias);
    return REMAT_OK;
  }
  // Independent products (an imported attention's per-head ones).
  const bool shared_b = shape.mode == MatmulMode::kBroadcast;
  products_threads(
      args, g, c, batch_a,
      [&](int64_t i, G* part, CTarget* part_c) {
        part->a = a + i * a_stride;
        part->b = shared_b ? b : b + i * b_stride;
        *part_c = c.at(i * c_stride);
      },
      bias);
  return REMAT_OK;
}

// Attention's per-head products (plan/head_matmul_shape.h): each product's matrices sit at their
// head's offset with their tensor's row length, and every tile of each is a work item, as in
// the batched mode; a product's bits are matmul's for the same matrices.
template <typename G, typename T>
remat_status head_matmul_on(const KernelArgs& args, const T* a, const T* b, uint8_t dtype) {
  const HeadMatmulShape shape = head_matmul_shape(*args.call);
  G g = gemm_of<G>(*args.call, shape.trans_a, shape.trans_b, shape.m, shape.n, shape.k, shape.a.ld,
                   shape.b.ld, shape.c.ld);
  set_operand_dtype(&g, dtype);
  const CTarget c = c_target(args);
  const int64_t heads = shape.heads;
  products_threads(
      args, g, c, shape.c.products,
      [&](int64_t i, G* part, CTarget* part_c) {
        part->a = a + shape.a.offset(i, heads);
        part->b = b + shape.b.offset(i, heads);
        *part_c = c.at(shape.c.offset(i, heads));
      },
      nullptr);
  return REMAT_OK;
}

const uint16_t* in_half(const KernelArgs& a, int i) {
  return static_cast<const uint16_t*>(a.in[i]);
}

// The product |args| asks for on its engine: |on|<G>(args, a, b, dtype) with the operands as
// widening.cc passes them, both 16-bit of one dtype (product_reads_16_bit) or both float32.
template <template <typename, typename> class On>
remat_status product(const KernelArgs& args, bool bf16_engine) {
  const uint8_t dtype = in_ref(args, 0).dtype;
  if (kBuildHalfFloats && is_half_float(dtype)) {
#if REMAT_CPU_BF16_GEMM
    if (dtype == REMAT_DTYPE_BF16 && bf16_engine)
      return On<Bf16Gemm, uint16_t>::run(args, in_half(args, 0), in_half(args, 1), dtype);
#endif
    return On<PanelGemm, uint16_t>::run(args, in_half(args, 0), in_half(args, 1), dtype);
  }
  return On<Gemm, float>::run(args, in_f32(args, 0), in_f32(args, 1), REMAT_DTYPE_F32);
}

template <typename G, typename T>
struct MatmulOn {
  static remat_status run(const KernelArgs& a, const T* x, const T* y, uint8_t d) {
    return matmul_on<G>(a, x, y, d);
  }
};
template <typename G, typename T>
struct HeadMatmulOn {
  static remat_status run(const KernelArgs& a, const T* x, const T* y, uint8_t d) {
    return head_matmul_on<G>(a, x, y, d);
  }
};

}  // namespace

remat_status matmul(const KernelArgs& args) {
  // bf16_gemm adds into C with alpha 1 only (gemm/gemm.h).
  const bool bf16_engine = kBuildHalfFloats && matmul_on_bf16_engine(*args.call) &&
                           !(args.accumulate && fattr(*args.call, attr::matmul::alpha) != 1.0f);
  return product<MatmulOn>(args, bf16_engine);
}

remat_status head_matmul(const KernelArgs& args) {
  return product<HeadMatmulOn>(args, kBuildHalfFloats && bf16_gemm_available());
}

}  // namespace cpu
}  // namespace remat
