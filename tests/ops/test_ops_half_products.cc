// The CPU backend's matrix products on 16-bit operands (backends/cpu/widening.h:
// product_reads_16_bit; ops/matmul.cc): matmul in its broadcast, batched and reduce modes, with
// f16 and bf16 operands, a float32 operand rounded to the product's type and a 16-bit operand of
// the other type, a float32 or 16-bit C with a bias, every transpose, at sizes one short of, at
// and one past the packed engine's blocks (kGemmMc, kGemmKc, kGemmNc), the matmul cut's row block
// and the 16-bit C's strips (kProductStripRows, kProductStripCols), on 1-3 threads. Each gives
// the bits of an independent path: the operands widened to float32, then packed_gemm() (or
// bf16_gemm() on bfloat16 operands where matmul_on_bf16_engine) over the whole product with its
// own packing, the bias added, and the sum rounded once where C is 16-bit.
#include "tests/cmocka_cpp.h"

#include <stdio.h>
#include <string.h>

#include <vector>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/ops/work_splits.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/widening.h"
#include "op_harness.h"
#include "plan/half_float.h"
#include "plan/ops.h"
#include "runtime/port.h"

namespace {

using remat::cpu::kGemmKc;
using remat::cpu::kGemmMc;
using remat::cpu::kGemmNc;
using remat::cpu::kMatmulColumnBlock;
using remat::cpu::kMatmulRowBlock;
using remat::cpu::kProductStripCols;
using remat::cpu::kProductStripRows;

// A tensor of |dims| in |dtype| (f32, f16 or bf16): its bytes, and the float32 values they hold.
struct Operand {
  uint8_t dtype;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
  std::vector<float> values;

  Operand(uint8_t dtype_, std::vector<int64_t> dims_, ops_test::Rng* rng)
      : dtype(dtype_), dims(std::move(dims_)) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    values.resize(static_cast<size_t>(n));
    bytes.resize(static_cast<size_t>(n) * (dtype == REMAT_DTYPE_F32 ? 4 : 2));
    for (int64_t i = 0; i < n; ++i) {
      float v = rng != nullptr ? static_cast<float>(rng->uniform(-1, 1)) : 0.0f;
      if (dtype == REMAT_DTYPE_F32) {
        memcpy(bytes.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = dtype == REMAT_DTYPE_F16 ? remat::f32_to_f16(v) : remat::f32_to_bf16(v);
        v = dtype == REMAT_DTYPE_F16 ? remat::f16_to_f32(h) : remat::bf16_to_f32(h);
        memcpy(bytes.data() + 2 * i, &h, 2);
      }
      values[static_cast<size_t>(i)] = v;
    }
  }
  int64_t numel() const { return static_cast<int64_t>(values.size()); }

  remat::TensorRef ref(uint64_t offset) const {
    remat::TensorRef r{};
    r.region = remat::Region::kArena;
    r.dtype = dtype;
    r.rank = static_cast<uint8_t>(dims.size());
    r.offset = offset;  // distinct per tensor: the widening tells tensors apart by offset
    r.numel = numel();
    r.bytes = bytes.size();
    for (size_t k = 0; k < dims.size(); ++k) r.dims[k] = dims[k];
    return r;
  }
};

// |x| rounded to |dtype| and back (float32: as it is).
float rounded(float x, uint8_t dtype) {
  if (dtype == REMAT_DTYPE_F16) return remat::f16_to_f32(remat::f32_to_f16(x));
  if (dtype == REMAT_DTYPE_BF16) return remat::bf16_to_f32(remat::f32_to_bf16(x));
  return x;
}

// |values| stored as |dtype|, as the kernel writes a C of that dtype.
std::vector<uint8_t> stored(const std::vector<float>& values, uint8_t dtype) {
  std::vector<uint8_t> out(values.size() * (dtype == REMAT_DTYPE_F32 ? 4 : 2));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == REMAT_DTYPE_F32) {
      memcpy(out.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t h =
          dtype == REMAT_DTYPE_F16 ? remat::f32_to_f16(values[i]) : remat::f32_to_bf16(values[i]);
      memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

enum class Mode { kBroadcast, kBatched, kReduce };

struct Case {
  Mode mode;
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
  uint8_t a_dtype, b_dtype, c_dtype;
  uint32_t threads;
};

// The stored dims of A (op(A) M x K) and B (op(B) K x N) of |c|, with the mode's batch.
std::vector<int64_t> dims_a(const Case& c) {
  const int64_t rows = c.trans_a ? c.k : c.m, cols = c.trans_a ? c.m : c.k;
  return {c.batch, rows, cols};
}
std::vector<int64_t> dims_b(const Case& c) {
  const int64_t rows = c.trans_b ? c.n : c.k, cols = c.trans_b ? c.k : c.n;
  if (c.mode == Mode::kBroadcast) return {rows, cols};
  return {c.batch, rows, cols};
}

// The expected C of |c|: the product of the operands rounded to the product's dtype, by
// packed_gemm() (bf16_gemm() where |bf16_engine|) over each whole product, then the bias, then
// rounded to C's dtype.
std::vector<uint8_t> expected(const Case& c, const Operand& a, const Operand& b,
                              const Operand* bias, uint8_t product, bool bf16_engine) {
  std::vector<float> wa(a.values), wb(b.values);
  for (float& v : wa) v = rounded(v, product);
  for (float& v : wb) v = rounded(v, product);
  const int64_t a_stride = c.m * c.k, b_stride = c.mode == Mode::kBroadcast ? 0 : c.k * c.n;
  const bool reduce = c.mode == Mode::kReduce;
  std::vector<float> out(static_cast<size_t>((reduce ? 1 : c.batch) * c.m * c.n));
  alignas(64) static float pack[remat::cpu::kGemmPackFloats];
  const int64_t lda = c.trans_a ? c.m : c.k, ldb = c.trans_b ? c.k : c.n;
  // One product per entry (the kernel's one product over a broadcast's stacked rows has their
  // bits: each element is summed over K in an order that depends on K alone), but one over the
  // stacked K where the kernel sums a reduce mode so (A transposed, B not).
  const bool stacked_k = reduce && c.trans_a && !c.trans_b;
  const int64_t products = stacked_k ? 1 : c.batch;
  for (int64_t i = 0; i < products; ++i) {
    const int64_t k = stacked_k ? c.k * c.batch : c.k;
    float* cp = out.data() + (reduce ? 0 : i * c.m * c.n);
    const float beta = reduce && i > 0 ? 1.0f : 0.0f;
    if (bf16_engine) {
      std::vector<uint16_t> ha(static_cast<size_t>(c.m * k)), hb(static_cast<size_t>(k * c.n));
      for (size_t x = 0; x < ha.size(); ++x)
        ha[x] = remat::f32_to_bf16(wa[static_cast<size_t>(i * a_stride) + x]);
      for (size_t x = 0; x < hb.size(); ++x)
        hb[x] = remat::f32_to_bf16(wb[static_cast<size_t>(i * b_stride) + x]);
      remat::cpu::Bf16Gemm g{c.trans_a, c.trans_b, c.m, c.n,  k,  1.0f, ha.data(),
                             lda,       hb.data(), ldb, beta, cp, c.n,  pack};
      remat::cpu::bf16_gemm(g);
    } else {
      remat::cpu::Gemm g{};
      g.trans_a = c.trans_a;
      g.trans_b = c.trans_b;
      g.m = c.m;
      g.n = c.n;
      g.k = k;
      g.alpha = 1.0f;
      g.a = wa.data() + i * a_stride;
      g.lda = lda;
      g.b = wb.data() + i * b_stride;
      g.ldb = ldb;
      g.beta = beta;
      g.c = cp;
      g.ldc = c.n;
      g.pack = pack;
      remat::cpu::packed_gemm(g);
    }
  }
  if (bias != nullptr) {
    for (size_t x = 0; x < out.size(); ++x) out[x] += bias->values[x % static_cast<size_t>(c.n)];
  }
  return stored(out, c.c_dtype);
}

// A matmul call C = op(A) op(B) (+ |bias| where |with_bias|), alpha 1, its tensors at offsets
// of their own (the widening tells tensors apart by offset). Not copied: the call points into it.
struct MatmulCall {
  remat::TensorRef refs[4];
  const remat::TensorRef* ins[3];
  const remat::TensorRef* outs[1];
  int64_t iattrs[2];
  float alpha = 1.0f;
  remat::OpCall call{};

  MatmulCall(const Operand& a, const Operand& b, bool with_bias, const Operand& bias,
             const Operand& c, bool trans_a, bool trans_b)
      : refs{a.ref(0), b.ref(1u << 28), bias.ref(2u << 28), c.ref(3u << 28)},
        ins{&refs[0], &refs[1], &refs[2]},
        outs{&refs[3]},
        iattrs{trans_a, trans_b} {
    call.code = static_cast<uint16_t>(remat::OpCode::kMatMul);
    call.num_inputs = with_bias ? 3 : 2;
    call.num_outputs = 1;
    call.inputs = ins;
    call.outputs = outs;
    call.iattrs = iattrs;
    call.num_iattrs = 2;
    call.fattrs = &alpha;
    call.num_fattrs = 1;
  }
  MatmulCall(const MatmulCall&) = delete;
  MatmulCall& operator=(const MatmulCall&) = delete;
};

remat::PortTeam* team() {
  static remat::PortTeam* t = remat::port_team_create(3);
  return t;
}

// Runs |call|, a matmul of |a| and |b| (and |bias| where it has one) into |out|, through the
// backend's widening and kernel on |threads| threads, in a workspace of cpu_widening_bytes();
// fails on a status other than REMAT_OK.
void run_through_widening(const remat::OpCall& call, const Operand& a, const Operand& b,
                          const Operand& bias, Operand* out, uint32_t threads) {
  std::vector<uint64_t> workspace(remat::cpu::cpu_widening_bytes(call) / 8 + 1);
  std::vector<float> scratch(remat::cpu::scratch_bytes(threads) / sizeof(float) + 16);
  char text[256] = {0};
  remat::ErrorBuffer err{text, sizeof(text)};
  remat::StepContext ctx{};
  remat::cpu::KernelArgs args{};
  args.call = &call;
  args.in[0] = const_cast<uint8_t*>(a.bytes.data());
  args.in[1] = const_cast<uint8_t*>(b.bytes.data());
  args.in[2] = const_cast<uint8_t*>(bias.bytes.data());
  args.out[0] = out->bytes.data();
  args.ctx = &ctx;
  args.err = &err;
  args.team = threads > 1 ? team() : nullptr;
  args.threads = threads;
  args.scratch = scratch.data() +
                 (16 - (reinterpret_cast<uintptr_t>(scratch.data()) / sizeof(float)) % 16) % 16;
  std::vector<float> strips(remat::cpu::strip_bytes(threads) / sizeof(float) + 16);
  args.strips =
      strips.data() + (16 - (reinterpret_cast<uintptr_t>(strips.data()) / sizeof(float)) % 16) % 16;
  const remat_status status =
      remat::cpu::run_widened(remat::cpu::kernel_for(call.code), args, workspace.data());
  if (status != REMAT_OK) fail_msg("status %d: %s", static_cast<int>(status), text);
}

// Runs |c| through the backend's widening and matmul kernel; fails unless C has the bits of
// expected() and the workspace is what cpu_widening_bytes() says.
void check(const Case& c, uint64_t seed) {
  ops_test::Rng rng(seed);
  const Operand a(c.a_dtype, dims_a(c), &rng), b(c.b_dtype, dims_b(c), &rng);
  const bool with_bias = c.mode == Mode::kBroadcast;
  const Operand bias(REMAT_DTYPE_F32, {c.n}, with_bias ? &rng : nullptr);
  Operand out(c.c_dtype,
              c.mode == Mode::kReduce ? std::vector<int64_t>{c.m, c.n}
                                      : std::vector<int64_t>{c.batch, c.m, c.n},
              nullptr);
  const MatmulCall matmul(a, b, with_bias, bias, out, c.trans_a, c.trans_b);
  const remat::OpCall& call = matmul.call;
  if (!remat::cpu::product_reads_16_bit(call))
    fail_msg("m %lld n %lld k %lld: the product does not read its operands in 16 bits",
             static_cast<long long>(c.m), static_cast<long long>(c.n), static_cast<long long>(c.k));
  const uint8_t product = remat::product_operand_dtype(call);
  const bool bf16_engine = product == REMAT_DTYPE_BF16 && remat::cpu::matmul_on_bf16_engine(call);
  // Copies of a float32 operand and of the other 16-bit type: 2 bytes an element each.
  uint64_t copies = 0;
  for (const Operand* o : {&a, &b}) {
    if (o->dtype != product) copies += (static_cast<uint64_t>(o->numel()) * 2 + 63) / 64 * 64;
  }
  const uint64_t workspace_bytes = remat::cpu::cpu_widening_bytes(call);
  if (workspace_bytes != copies)
    fail_msg("workspace %llu bytes, the operands' 16-bit copies take %llu",
             static_cast<unsigned long long>(workspace_bytes),
             static_cast<unsigned long long>(copies));
  run_through_widening(call, a, b, bias, &out, c.threads);
  const std::vector<uint8_t> want =
      expected(c, a, b, with_bias ? &bias : nullptr, product, bf16_engine);
  if (want != out.bytes) {
    const size_t size = c.c_dtype == REMAT_DTYPE_F32 ? 4 : 2;
    size_t at = 0;
    while (at < want.size() && memcmp(&want[at], &out.bytes[at], size) == 0) at += size;
    fail_msg(
        "mode %d, batch %lld, m %lld n %lld k %lld, trans %d%d, dtypes %u %u -> %u, %u threads "
        "(%s): C's element %zu differs",
        static_cast<int>(c.mode), static_cast<long long>(c.batch), static_cast<long long>(c.m),
        static_cast<long long>(c.n), static_cast<long long>(c.k), c.trans_a, c.trans_b, c.a_dtype,
        c.b_dtype, c.c_dtype, c.threads, bf16_engine ? "bf16_gemm" : "packed panels", at / size);
  }
}

void products_give_the_bits_of_their_engine_on_widened_operands(void**) {
  // M, N, K around the strips (256 x 256, a tile's), the engine's blocks (96, 256, 256) and the
  // cut's rows (a product of 2 x 256 rows or more is cut into row tiles of 256 as wide as N:
  // tiles of more than one strip across; one of fewer rows but 4 column tiles stays whole, so
  // that its 300 rows take two strips down).
  const int64_t sizes[][3] = {{1, 1, 1},
                              {kProductStripRows - 1, kProductStripCols - 1, kGemmKc - 1},
                              {kProductStripRows, kProductStripCols, kGemmKc},
                              {kProductStripRows + 1, kProductStripCols + 1, kGemmKc + 1},
                              {kGemmMc - 1, kGemmNc + 3, 33},
                              {kGemmMc + 1, 17, 2 * kGemmKc + 5},
                              {2 * kMatmulRowBlock + 1, kProductStripCols + 5, 40},
                              {kProductStripRows + 44, 4 * kMatmulColumnBlock, 40}};
  struct Dtypes {
    uint8_t a, b;
  } const dtypes[] = {{REMAT_DTYPE_F16, REMAT_DTYPE_F16},
                      {REMAT_DTYPE_BF16, REMAT_DTYPE_BF16},
                      {REMAT_DTYPE_BF16, REMAT_DTYPE_F32},
                      {REMAT_DTYPE_F32, REMAT_DTYPE_F16},
                      {REMAT_DTYPE_F16, REMAT_DTYPE_BF16}};
  uint64_t seed = 1;
  int runs = 0;
  for (const auto& s : sizes) {
    for (Mode mode : {Mode::kBroadcast, Mode::kBatched, Mode::kReduce}) {
      for (int t = 0; t < 4; ++t) {
        for (const Dtypes& d : dtypes) {
          Case c{};
          c.mode = mode;
          c.batch = mode == Mode::kBatched ? 2 : 3;
          c.m = s[0];
          c.n = s[1];
          c.k = s[2];
          c.trans_a = (t & 1) != 0;
          c.trans_b = (t & 2) != 0;
          c.a_dtype = d.a;
          c.b_dtype = d.b;
          // The product's dtype, or float32 C (a reduce mode's C is float32: weight gradients).
          const uint8_t product = d.a != REMAT_DTYPE_F32 ? d.a : d.b;
          c.c_dtype = mode != Mode::kReduce && seed % 2 == 0
                          ? product
                          : static_cast<uint8_t>(REMAT_DTYPE_F32);
          c.threads = static_cast<uint32_t>(1 + seed % 3);
          check(c, seed++);
          ++runs;
        }
      }
    }
  }
  printf("%d products, bfloat16 ones on %s\n", runs,
         remat::cpu::bf16_gemm_available() ? remat::cpu::bf16_gemm_engine()
                                           : "the packed engine's panels");
}

// A product whose 16-bit C a reduce-mode sum makes, or whose bias is 16-bit, is widened whole
// instead: it needs float32 sums or operands the kernel does not take in 16 bits.
void products_that_need_float32_sums_are_widened_whole(void**) {
  const remat::TensorRef a{remat::Region::kArena, REMAT_DTYPE_BF16, 3, 0, 2 * 24, 24, {2, 3, 4}};
  const remat::TensorRef b{remat::Region::kArena, REMAT_DTYPE_BF16, 3, 64, 2 * 40, 40, {2, 4, 5}};
  remat::TensorRef c{remat::Region::kArena, REMAT_DTYPE_BF16, 2, 256, 2 * 15, 15, {3, 5}};
  const remat::TensorRef* ins[2] = {&a, &b};
  const remat::TensorRef* outs[1] = {&c};
  const int64_t iattrs[2] = {0, 0};
  const float alpha = 1.0f;
  remat::OpCall call{
      static_cast<uint16_t>(remat::OpCode::kMatMul), 2, 1, 0, ins, outs, iattrs, &alpha, 2, 1};
  assert_false(remat::cpu::product_reads_16_bit(call));  // a 16-bit sum over the batch
  c.dtype = REMAT_DTYPE_F32;
  c.bytes = 4 * 15;
  assert_true(remat::cpu::product_reads_16_bit(call));
  assert_int_equal(remat::cpu::cpu_widening_bytes(call), 0);
}

// A product over the rows of a rank-2 float32 A (a network's input: backends/shared/
// batch_chunks.h, matmul_rows), which the CPU rounds product_chunk_rows() rows at a time: C = A
// op(B) [+ bias] row by row, or (|sum|) C = A^T B summed over the rows into float32 (the weight
// gradient), B then [rows, n].
struct RowsCase {
  bool sum;
  int64_t rows, k, n;  // A [rows, k]
  bool trans_b;
  uint8_t b_dtype, c_dtype;
  uint32_t threads;
};

// The rows a chunk holds: as many float32 rows of A as kWideningChunkBytes takes, at least one.
int64_t rows_a_chunk(int64_t k) {
  const int64_t rows = static_cast<int64_t>(remat::kWideningChunkBytes / (4 * k));
  return rows > 0 ? rows : 1;
}

// Fails unless |c| through the backend's widening gives the bits of its engine over the operands
// rounded to the product's type (packed_gemm(), or bf16_gemm() where it runs the product): over
// the whole product, or, for a sum, chunk by chunk of rows_a_chunk() rows, each chunk's product
// added to C; and unless the workspace holds a chunk's copy of A (and B's copy, where B is
// float32).
void check_rows(const RowsCase& c, uint64_t seed) {
  ops_test::Rng rng(seed);
  const Operand a(REMAT_DTYPE_F32, {c.rows, c.k}, &rng);
  const std::vector<int64_t> b_dims = c.sum       ? std::vector<int64_t>{c.rows, c.n}
                                      : c.trans_b ? std::vector<int64_t>{c.n, c.k}
                                                  : std::vector<int64_t>{c.k, c.n};
  const Operand b(c.b_dtype, b_dims, &rng);
  const Operand bias(REMAT_DTYPE_F32, {c.n}, c.sum ? nullptr : &rng);
  Operand out(c.c_dtype, c.sum ? std::vector<int64_t>{c.k, c.n} : std::vector<int64_t>{c.rows, c.n},
              nullptr);
  const MatmulCall matmul(a, b, !c.sum, bias, out, c.sum, c.trans_b);
  const remat::OpCall& call = matmul.call;
  assert_true(remat::cpu::product_reads_16_bit(call));
  const int64_t chunk = rows_a_chunk(c.k);
  const int64_t want_rows = c.rows > chunk ? chunk : 0;
  if (remat::cpu::product_chunk_rows(call) != want_rows)
    fail_msg("rows %lld of %lld: chunks of %lld rows, not %lld", static_cast<long long>(c.rows),
             static_cast<long long>(c.k),
             static_cast<long long>(remat::cpu::product_chunk_rows(call)),
             static_cast<long long>(want_rows));
  const uint8_t product = remat::product_operand_dtype(call);
  const bool bf16_engine = product == REMAT_DTYPE_BF16 && remat::cpu::matmul_on_bf16_engine(call);
  const int64_t copied_rows = c.rows > chunk ? chunk : c.rows;
  uint64_t copies = (static_cast<uint64_t>(copied_rows * c.k) * 2 + 63) / 64 * 64;
  if (b.dtype != product) copies += (static_cast<uint64_t>(b.numel()) * 2 + 63) / 64 * 64;
  if (remat::cpu::cpu_widening_bytes(call) != copies)
    fail_msg("rows %lld: workspace %llu bytes, the copies take %llu",
             static_cast<long long>(c.rows),
             static_cast<unsigned long long>(remat::cpu::cpu_widening_bytes(call)),
             static_cast<unsigned long long>(copies));
  run_through_widening(call, a, b, bias, &out, c.threads);

  std::vector<float> wa(a.values), wb(b.values);
  for (float& v : wa) v = rounded(v, product);
  for (float& v : wb) v = rounded(v, product);
  std::vector<float> want(static_cast<size_t>(out.numel()));
  alignas(64) static float pack[remat::cpu::kGemmPackFloats];
  // One product over every row, or one per chunk of rows for a sum.
  const int64_t step = c.sum ? chunk : c.rows;
  for (int64_t first = 0; first < c.rows; first += step) {
    const int64_t count = c.rows - first < step ? c.rows - first : step;
    const int64_t m = c.sum ? c.k : c.rows, k = c.sum ? count : c.k;
    const float* pa = wa.data() + (c.sum ? first * c.k : 0);
    const float* pb = wb.data() + (c.sum ? first * c.n : 0);
    const int64_t lda = c.k, ldb = c.sum || !c.trans_b ? c.n : c.k;
    const bool tb = !c.sum && c.trans_b;
    const float beta = first > 0 ? 1.0f : 0.0f;
    if (bf16_engine) {
      std::vector<uint16_t> ha(static_cast<size_t>(m * k)), hb(static_cast<size_t>(k * c.n));
      for (size_t x = 0; x < ha.size(); ++x) ha[x] = remat::f32_to_bf16(pa[x]);
      for (size_t x = 0; x < hb.size(); ++x) hb[x] = remat::f32_to_bf16(pb[x]);
      remat::cpu::Bf16Gemm g{c.sum, tb,        m,   c.n,  k,           1.0f, ha.data(),
                             lda,   hb.data(), ldb, beta, want.data(), c.n,  pack};
      remat::cpu::bf16_gemm(g);
    } else {
      remat::cpu::Gemm g{};
      g.trans_a = c.sum;
      g.trans_b = tb;
      g.m = m;
      g.n = c.n;
      g.k = k;
      g.alpha = 1.0f;
      g.a = pa;
      g.lda = lda;
      g.b = pb;
      g.ldb = ldb;
      g.beta = beta;
      g.c = want.data();
      g.ldc = c.n;
      g.pack = pack;
      remat::cpu::packed_gemm(g);
    }
  }
  if (!c.sum) {
    for (size_t x = 0; x < want.size(); ++x) want[x] += bias.values[x % static_cast<size_t>(c.n)];
  }
  if (stored(want, c.c_dtype) != out.bytes)
    fail_msg(
        "%s, rows %lld, k %lld, n %lld, trans_b %d, dtypes f32 %u -> %u, %u threads (%s): "
        "C differs",
        c.sum ? "sum over the rows" : "rows", static_cast<long long>(c.rows),
        static_cast<long long>(c.k), static_cast<long long>(c.n), c.trans_b, c.b_dtype, c.c_dtype,
        c.threads, bf16_engine ? "bf16_gemm" : "packed panels");
}

// Rows one short of, at and past a chunk (1024 float32 rows of 1024), two chunks and a short one,
// and rows longer than a chunk (one row a chunk); every dtype of B and C a plan gives such a
// product (a float32 or 16-bit weight and 16-bit or float32 C; a 16-bit output gradient into a
// float32 weight gradient), on 1-3 threads.
void products_over_a_float32_inputs_rows_round_a_chunk_of_them_at_a_time(void**) {
  const int64_t k = 1024, chunk = rows_a_chunk(k);
  const int64_t long_row = (int64_t{1} << 20) + 3;  // 4 MiB and 12 bytes a row
  const int64_t shapes[][3] = {{chunk - 1, k, 40},
                               {chunk, k, 40},
                               {chunk + 1, k, 40},
                               {2 * chunk + 5, k, 17},
                               {3, long_row, 5}};
  uint64_t seed = 7;
  int runs = 0;
  for (const auto& s : shapes) {
    for (const uint8_t half : {REMAT_DTYPE_BF16, REMAT_DTYPE_F16}) {
      const RowsCase cases[] = {
          {false, s[0], s[1], s[2], false, REMAT_DTYPE_F32, half, 0},
          {false, s[0], s[1], s[2], true, half, REMAT_DTYPE_F32, 0},
          {true, s[0], s[1], s[2], false, half, REMAT_DTYPE_F32, 0},
      };
      for (RowsCase c : cases) {
        c.threads = static_cast<uint32_t>(1 + seed % 3);
        check_rows(c, seed++);
        ++runs;
      }
    }
  }
  printf("%d products over rows of a float32 A, %lld rows of %lld a chunk\n", runs,
         static_cast<long long>(chunk), static_cast<long long>(k));
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(products_give_the_bits_of_their_engine_on_widened_operands),
      cmocka_unit_test(products_that_need_float32_sums_are_widened_whole),
      cmocka_unit_test(products_over_a_float32_inputs_rows_round_a_chunk_of_them_at_a_time),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
