// Backend conformance, widening: how each backend runs an op whose tensors include 16-bit floats
// (REMAT_DTYPE_BF16, F16) with its float32 kernels (backends/cpu/widening.h,
// backends/gpu/ops/widening.h): the CPU's widened runs give the float32 kernels' bits, its
// chunked and row-reading paths too; the GPUs' within the op cases' tolerances; the conversions
// give the scalar conversions' bits; a call without its workspace or scratch is refused. Each
// backend's workspace against `remat compile`'s figure: test_conformance_workspace.cc.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/widening.h"
#include "backends/device_profiles.h"
#include "compiler/compiler.h"
#include "compiler/precision.h"
#include "plan/half_float.h"
#include "runtime/backend_registry.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/backends/conformance_harness.h"
#include "tests/backends/op_cases.h"

namespace conformance {
namespace {

// Whether the CPU sums some products of |call| from 16-bit operands as they are, in another
// order than its float32 kernel (OpenBLAS, where it runs matmul): a product's on bf16_gemm or
// the packed engine, fused attention's scores.
bool sums_16_bit_products(const remat::OpCall& call) {
  return remat::cpu::product_reads_16_bit(call) || remat::cpu::attention_reads_bf16(call);
}

// Runs every case of |cases| with a float tensor on the CPU backend in every widening pattern
// (all its float tensors in bf16, then in f16, then mixed: every other one 16-bit, starting with
// the first or the second, the rest f32) on 1, 2 and 3 threads, against the float32 kernels on
// the same inputs rounded to 16 bits: the same bits, rounded once where an output is 16-bit; but
// a matrix product (on bf16_gemm, or the packed engine's panels) and, on a CPU with
// AVX512-BF16, fused attention's scores (VDPBF16PS) sum in their own order, within the case's
// tolerance.
void cpu_widened_runs_give_the_f32_kernels_bits(const std::vector<remat_test::OpCase>& cases) {
  if (backend_name(g_backend) != "cpu") {
    printf("%s: widening is the cpu backend's\n", g_backend.c_str());
    skip();
  }
  constexpr uint64_t kArena = 1 << 24, kPersistent = 4096;
  alignas(256) static uint8_t arenas[2][kArena], persistent[2][kPersistent];
  for (uint32_t threads = 1; threads <= 3; ++threads) {
    remat::Backend* backends[2] = {nullptr, nullptr};
    for (int b = 0; b < 2; ++b)
      backends[b] = backend_over("cpu", arenas[b], kArena, persistent[b], kPersistent, threads);
    size_t runs = 0, products = 0;
    for (const remat_test::OpCase& c : cases) {
      for (int pattern = 0; pattern < remat_test::kWideningPatterns; ++pattern) {
        const std::vector<remat_dtype> floats = remat_test::widening_pattern(c, pattern);
        if (floats.empty()) continue;
        products += remat_test::run_widened_case(c, floats, backends[0], backends[1], "cpu", 0.0,
                                                 sums_16_bit_products);
        ++runs;
      }
    }
    printf(
        "  %zu widened runs on %u threads: bits of the f32 kernels; %zu more, 16-bit products "
        "(bfloat16 engine: %s) within the cases' tolerances\n",
        runs - products, static_cast<unsigned>(threads), products,
        remat::cpu::bf16_gemm_available() ? remat::cpu::bf16_gemm_engine() : "none here");
    // REMAT_CPU_BF16=widen: no bfloat16 engine runs.
    const char* bf16_choice = getenv("REMAT_CPU_BF16");
    if (bf16_choice != nullptr && strcmp(bf16_choice, "widen") == 0 &&
        remat::cpu::bf16_gemm_available())
      fail_msg("REMAT_CPU_BF16=widen, yet the bfloat16 engine %s runs",
               remat::cpu::bf16_gemm_engine());
    remat::destroy_backend(backends[0]);
    remat::destroy_backend(backends[1]);
  }
}

// The CPU backend's widening (backends/cpu/widening.h) of every op case. The CPU backend's own
// check: other backends' float32 kernels differ from the CPU's within the cases' tolerances, so
// theirs is every_op_runs_widened_within_the_cases_tolerances.
void every_op_runs_widened_from_16_bit_floats_bit_for_bit(void**) {
  cpu_widened_runs_give_the_f32_kernels_bits(remat_test::every_op_case());
}

// Whether the CPU widens |call| a chunk of its batch at a time.
bool chunks_its_batch(const remat::OpCall& call) { return remat::cpu::batch_chunk_items(call) > 0; }

// The ops the CPU widens a chunk at a time (runs_per_element) or reads in 16 bits as they are
// (reads_16_bit_input: reduce_leading, bias_add, layer norm and its gradient), at sizes below, at
// and past a chunk (kPerElementChunk), past their thread grain (16384 elements: a part of a run
// that ends inside a chunk), for reduce_leading around the column sums' width (kColumnSumsWidth,
// 256), for bias_add around its row chunk (1024), for dropout around its chunk (1024) and
// thread grain, for batch norm's rows around theirs
// (kChannelChunk, 1024), for layer norm around its gradient's column
// block (256), rows past its row grain, and rows of the longest that fit the thread's strip
// (kWideningStripFloats / kNormRowSlots) and one longer, widened whole instead: the bits of the
// whole-tensor widening, that is of the float32 kernels; and fused attention at the edges of its
// bfloat16 scores' packing (attention_reads_bf16), within the cases' tolerance.
void chunked_and_16_bit_reading_ops_give_the_f32_kernels_bits(void**) {
  // Before any container: cmocka's skip() longjmps past their destructors.
  if (backend_name(g_backend) != "cpu") {
    printf("%s: widening is the cpu backend's\n", g_backend.c_str());
    skip();
  }
  constexpr int64_t kChunk = remat::cpu::kPerElementChunk;
  std::vector<remat_test::OpCase> cases;
  size_t per_element = 0;
  for (const remat_test::OpCase& c : remat_test::every_op_case()) {
    if (c.code == remat::OpCode::kReduceLeading) {
      for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
               {3, 255}, {1, 256}, {5, 257}, {40, 600}, {kChunk + 1, 3}}) {
        remat_test::OpCase sized = c;
        sized.in_dims = {dims};
        sized.out_dims = {{dims[1]}};
        cases.push_back(sized);
      }
      continue;
    }
    if (c.code == remat::OpCode::kBiasAdd) {  // a row's chunks of 1024 on the stack
      for (const std::vector<int64_t>& rows_n :
           std::vector<std::vector<int64_t>>{{3, 1023}, {2, 1024}, {5, 1025}, {40, 3000}}) {
        remat_test::OpCase sized = c;
        sized.in_dims = {rows_n, {rows_n[1]}};
        sized.out_dims = {rows_n};
        cases.push_back(sized);
      }
      continue;
    }
    if (c.code == remat::OpCode::kDropout || c.code == remat::OpCode::kDropoutGrad) {
      // Around its chunk of 1024 and its thread grain (16384): a thread's part ending mid-chunk.
      for (const int64_t n :
           {int64_t{1023}, int64_t{1024}, int64_t{1025}, int64_t{16385}, int64_t{70001}}) {
        remat_test::OpCase sized = c;
        sized.in_dims = {{n}};
        sized.out_dims = {{n}};
        cases.push_back(sized);
      }
      continue;
    }
    if (c.code == remat::OpCode::kLayerNorm || c.code == remat::OpCode::kLayerNormGrad) {
      constexpr int64_t kLongest = remat::kWideningStripFloats / remat::kNormRowSlots;
      for (const std::vector<int64_t>& rows_n : std::vector<std::vector<int64_t>>{
               {3, 255}, {2, 256}, {70, 257}, {3, kLongest}, {2, kLongest + 1}}) {
        const int64_t rows = rows_n[0], n = rows_n[1];
        remat_test::OpCase sized = c;
        if (c.code == remat::OpCode::kLayerNorm) {
          sized.in_dims = {{rows, n}, {n}, {n}};
          sized.out_dims = {{rows, n}, {rows}, {rows}};
        } else {
          sized.in_dims = {{rows, n}, {rows, n}, {rows}, {rows}, {n}};
          sized.out_dims = {{rows, n}, {n}, {n}};
        }
        cases.push_back(sized);
      }
      continue;
    }
    if (!remat_test::call_of_case_is(c, remat::cpu::runs_per_element)) continue;
    ++per_element;
    for (const int64_t n : {kChunk - 1, kChunk, kChunk + 1, 3 * kChunk + 7, int64_t{70001}}) {
      remat_test::OpCase sized = c;
      for (std::vector<int64_t>& dims : sized.in_dims) dims = {n};
      for (std::vector<int64_t>& dims : sized.out_dims) dims = {n};
      cases.push_back(sized);
    }
  }
  const std::vector<remat_test::OpCase> norms = remat_test::batch_norm_row_cases();
  cases.insert(cases.end(), norms.begin(), norms.end());
  // Every per-element op of the list in widening.cc has a case (so none is left untested).
  if (per_element < 20) fail_msg("only %zu op cases run per element", per_element);
  // Fused attention, which sums its scores from bfloat16 q and k (dcontext and v) on AVX512-BF16
  // (attention_reads_bf16): a forward unit's query tiles reusing a key tile's packed pairs
  // (40 and 70 queries), keys past a tile (65, 130), depths past a packing's 128 (131, and 130
  // for the gradient's dcontext v^T) and at its 64; q, k, v [B, S, heads * D], heads 2 or 1.
  const double kMm = 1e-4;
  const remat::OpCode fwd = remat::OpCode::kAttention, grad = remat::OpCode::kAttentionGrad;
  cases.push_back({"attention, deep heads",
                   fwd,
                   {{1, 40, 262}, {1, 130, 262}, {1, 130, 18}},
                   {{1, 40, 18}, {1, 2, 40}},
                   {2, 3},
                   {0.125f, 0.0f},
                   kMm});
  cases.push_back({"attention, reused keys",
                   fwd,
                   {{1, 70, 64}, {1, 65, 64}, {1, 65, 64}},
                   {{1, 70, 64}, {1, 1, 70}},
                   {1, 3},
                   {0.125f, 0.0f},
                   kMm});
  cases.push_back(
      {"attention_grad, deep heads",
       grad,
       {{1, 20, 260}, {1, 20, 258}, {1, 70, 258}, {1, 70, 260}, {1, 20, 260}, {1, 2, 20}},
       {{1, 20, 258}, {1, 70, 258}, {1, 70, 260}},
       {2, 3},
       {0.125f, 0.0f},
       kMm});
  // Fused attention whose 16-bit tensors take more than kWideningChunkBytes in float32: widened
  // a chunk of its batch at a time (batch_chunk_items; all tensors bf16 or all f16: 15 of 16
  // items, 7 of 9, a last chunk shorter; every other one 16-bit, the log-sum-exp float32 as in
  // a plan: 21 of 24), with dropout drawn by each item's index in the whole batch (as rank 0,
  // and as rank 1 of a data-parallel run), a per-batch mask split with the batch and a shared
  // one widened whole.
  const size_t first_batch_case = cases.size();
  cases.push_back({"attention, batch chunks",
                   fwd,
                   {{16, 64, 256}, {16, 64, 256}, {16, 64, 256}, {16, 64, 64}},
                   {{16, 64, 256}, {16, 4, 64}},
                   {4, 5},
                   {0.125f, 0.1f},
                   kMm});
  cases.push_back(
      {"attention_grad, batch chunks",
       grad,
       {{9, 64, 256}, {9, 64, 256}, {9, 64, 256}, {9, 64, 256}, {9, 64, 256}, {9, 4, 64}, {64, 64}},
       {{9, 64, 256}, {9, 64, 256}, {9, 64, 256}},
       {4, 5},
       {0.125f, 0.1f},
       kMm});
  cases.push_back({"attention, batch chunks, float32 lse",
                   fwd,
                   {{24, 64, 256}, {24, 64, 256}, {24, 64, 256}, {24, 64, 64}},
                   {{24, 64, 256}, {24, 4, 64}},
                   {4, 5},
                   {0.125f, 0.1f},
                   kMm});
  cases.push_back(cases[first_batch_case]);
  cases.back().name = "attention, batch chunks, rank 1";
  cases.back().rank = 1;
  for (size_t k = first_batch_case; k < cases.size(); ++k) {
    // The float32-lse case chunks in mixed pattern 2 (q, v and the context bf16).
    const bool mixed = k == first_batch_case + 2;
    for (int pattern = mixed ? 2 : 0; pattern < (mixed ? 3 : 2); ++pattern) {
      if (!remat_test::call_of_case_is(cases[k], chunks_its_batch,
                                       remat_test::widening_pattern(cases[k], pattern)))
        fail_msg("%s is widened whole in pattern %d", cases[k].name, pattern);
    }
  }
  cpu_widened_runs_give_the_f32_kernels_bits(cases);
}

// A device backend's widening (backends/gpu/ops/widening.h), for every op case with a float
// tensor in the patterns above: each output is the CPU's float32 kernel's over the same 16-bit
// inputs within the case's tolerance (op_cases.h), a 16-bit output within the roundings of that
// range, and bit for bit where the case is bitwise.
void every_op_runs_widened_within_the_cases_tolerances(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (backend_name(g_backend) == "cpu" || !profile_under_test().half_floats) {
    printf("%s: the cpu's own widening is checked bit for bit above, or no 16-bit floats\n",
           g_backend.c_str());
    skip();
  }
  constexpr uint64_t kArena = 1 << 22, kPersistent = 4096;
  alignas(256) static uint8_t arena[kArena], persistent[kPersistent];
  remat::Backend* cpu = backend_over("cpu", arena, kArena, persistent, kPersistent);
  remat::Backend* other = backend_over(g_backend, arena, kArena, persistent, kPersistent);
  size_t runs = 0;
  for (const remat_test::OpCase& c : remat_test::every_op_case()) {
    for (int pattern = 0; pattern < remat_test::kWideningPatterns; ++pattern) {
      const std::vector<remat_dtype> floats = remat_test::widening_pattern(c, pattern);
      if (floats.empty()) continue;
      remat_test::run_widened_case(c, floats, cpu, other, g_backend.c_str(), c.tol);
      ++runs;
    }
    printf("  %-28s ok in bf16, f16 and mixed\n", c.name);
  }
  printf("%zu widened runs on %s within the cases' tolerances\n", runs, g_backend.c_str());
  remat::destroy_backend(other);
  remat::destroy_backend(cpu);
}

// The conversions themselves, through a copy op with a 16-bit input or output (so through the
// backend's widening): every one of the 65536 bfloat16 and binary16 patterns widened, and
// float32 patterns narrowed (every top half, with low halves at the ties of both formats, just
// above and below them, and random ones: subnormals of both, overflow to infinity, NaNs with
// payloads, both signs), give the bits of src/plan/half_float.h's functions exactly, on every
// backend that runs 16-bit floats.
void widening_and_narrowing_give_the_scalar_conversions_bits(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (!profile_under_test().half_floats) {
    printf("%s runs float32 tensors only\n", g_backend.c_str());
    skip();
  }
  constexpr uint64_t kN = 65536, kArena = kN * 6, kPersistent = 4096;
  alignas(256) static uint8_t arena[kArena], persistent[kPersistent];
  remat_test::Errors e;
  remat::Backend* backend = backend_over(g_backend, arena, kArena, persistent, kPersistent);
  remat::TensorRef wide = bytes_tensor(remat::Region::kArena, 0, kN * 4);
  remat::TensorRef half = bytes_tensor(remat::Region::kArena, kN * 4, kN * 4);
  half.bytes = kN * 2;
  const remat::StepContext ctx{kSeed, 0};
  // Runs a copy from |in| to |out| on the backend; |bytes| of |out| are read back into |back|.
  const auto copy = [&](const remat::TensorRef& in, const remat::TensorRef& out, void* back) {
    const remat::OpCall call = make_call(remat::OpCode::kCopy, 0, &in, &out);
    if (backend->prepare(&call, 1, &e.buf) != REMAT_OK) fail_msg("prepare: %s", e.text);
    if (backend->run_op(call, ctx, &e.buf) != REMAT_OK || backend->sync(&e.buf) != REMAT_OK)
      fail_msg("copy: %s", e.text);
    if (backend->download(out.region, out.offset, back, out.bytes, &e.buf) != REMAT_OK)
      fail_msg("download: %s", e.text);
  };
  static uint16_t h[kN];
  static uint32_t f[kN];
  // Low halves of the float32 patterns: bf16 ties and neighbours (0x8000), binary16 ties at the
  // normals' 13 dropped bits with either kept parity (0x1000, 0x3000, ...), zeros, ones; the last
  // row random.
  const uint32_t lows[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x2000, 0x2FFF, 0x3000,
                           0x3001, 0x7FFF, 0x8000, 0x8001, 0xBFFF, 0xC000, 0xF000, 0xFFFF};
  constexpr size_t kLows = sizeof(lows) / sizeof(lows[0]);
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  size_t narrowed = 0;
  for (remat_dtype dtype : {REMAT_DTYPE_BF16, REMAT_DTYPE_F16}) {
    const char* name = dtype == REMAT_DTYPE_BF16 ? "bf16" : "f16";
    half.dtype = dtype;
    for (uint32_t i = 0; i < kN; ++i) h[i] = static_cast<uint16_t>(i);
    if (backend->upload(half.region, half.offset, h, half.bytes, &e.buf) != REMAT_OK)
      fail_msg("upload: %s", e.text);
    copy(half, wide, f);
    for (uint32_t i = 0; i < kN; ++i) {
      const float x =
          dtype == REMAT_DTYPE_BF16 ? remat::bf16_to_f32(h[i]) : remat::f16_to_f32(h[i]);
      uint32_t want;
      memcpy(&want, &x, 4);
      if (f[i] != want)
        fail_msg("%s 0x%04x widened on %s: 0x%08x, expected 0x%08x", name, i, g_backend.c_str(),
                 f[i], want);
    }
    for (size_t row = 0; row <= kLows; ++row) {
      for (uint32_t i = 0; i < kN; ++i) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        f[i] = i << 16 | (row < kLows ? lows[row] : static_cast<uint32_t>(rng >> 48));
      }
      if (backend->upload(wide.region, wide.offset, f, wide.bytes, &e.buf) != REMAT_OK)
        fail_msg("upload: %s", e.text);
      copy(wide, half, h);
      for (uint32_t i = 0; i < kN; ++i) {
        float x;
        memcpy(&x, &f[i], 4);
        const uint16_t want =
            dtype == REMAT_DTYPE_BF16 ? remat::f32_to_bf16(x) : remat::f32_to_f16(x);
        if (h[i] != want)
          fail_msg("0x%08x narrowed to %s on %s: 0x%04x, expected 0x%04x", f[i], name,
                   g_backend.c_str(), h[i], want);
      }
      narrowed += kN;
    }
  }
  printf("%s: 2 x 65536 16-bit patterns widened, %zu float32 patterns narrowed, bit for bit\n",
         g_backend.c_str(), narrowed);
  remat::destroy_backend(backend);
}

// The backend under test over an 8 KiB arena and 256 persistent bytes, for the failure-path
// tests that run single ops; the caller destroys it.
remat::Backend* small_backend() {
  constexpr uint64_t kArena = 8192, kPersistent = 256;
  alignas(256) static uint8_t arena[kArena], persistent[kPersistent];
  return backend_over(g_backend, arena, kArena, persistent, kPersistent);
}

// The widening's failure paths: an op run with 16-bit tensors that prepare() was not given is
// refused (FAILED_PRECONDITION, naming the op and the bytes) and writes nothing; on a device
// backend, a workspace larger than the device allocates is refused at prepare()
// (RESOURCE_EXHAUSTED), and the backend still runs what fits.
void a_16_bit_op_without_its_workspace_is_refused(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const remat::DeviceProfile& profile = profile_under_test();
  if (!profile.half_floats) {
    printf("%s runs float32 tensors only\n", g_backend.c_str());
    skip();
  }
  remat_test::Errors e;
  remat::Backend* backend = small_backend();
  remat::TensorRef half = bytes_tensor(remat::Region::kArena, 0, 2000);
  half.dtype = REMAT_DTYPE_BF16;
  half.bytes = 1000;
  const remat::TensorRef wide = bytes_tensor(remat::Region::kArena, 2048, 2000);
  const std::vector<float> sentinel(500, 7.0f);
  std::vector<float> back(500);
  const remat::OpCall call = make_call(remat::OpCode::kCopy, 5, &half, &wide);
  const remat::StepContext ctx{kSeed, 0};
  assert_int_equal(backend->upload(wide.region, wide.offset, sentinel.data(), wide.bytes, &e.buf),
                   REMAT_OK);
  assert_int_equal(backend->run_op(call, ctx, &e.buf), REMAT_ERROR_FAILED_PRECONDITION);
  printf("%s: %s\n", g_backend.c_str(), e.text);
  for (const char* part : {"op 5 (copy)", "2048 bytes", "prepare() gave 0"})
    if (strstr(e.text, part) == nullptr) fail_msg("'%s' lacks '%s'", e.text, part);
  assert_int_equal(backend->sync(&e.buf), REMAT_OK);
  assert_int_equal(backend->download(wide.region, wide.offset, back.data(), wide.bytes, &e.buf),
                   REMAT_OK);
  assert_true(back == sentinel);
#if !REMAT_COMPACT_TABLES  // Builds with compact tables have no device backend.
  if (!profile.binds_host_memory) {
    // 2^40 elements: a 4 TiB workspace, more than any device allocates in one buffer.
    remat::TensorRef huge = half;
    huge.numel = int64_t{1} << 40;
    huge.dims[0] = huge.numel;
    huge.bytes = static_cast<uint64_t>(huge.numel) * 2;
    const remat::OpCall too_big = make_call(remat::OpCode::kCopy, 6, &huge, &wide);
    assert_int_equal(backend->prepare(&too_big, 1, &e.buf), REMAT_ERROR_RESOURCE_EXHAUSTED);
    printf("%s: %s\n", g_backend.c_str(), e.text);
    assert_non_null(strstr(e.text, "4398046511104 bytes"));
  }
#endif
  assert_int_equal(backend->prepare(&call, 1, &e.buf), REMAT_OK);
  assert_int_equal(backend->run_op(call, ctx, &e.buf), REMAT_OK);
  assert_int_equal(backend->sync(&e.buf), REMAT_OK);
  remat::destroy_backend(backend);
}

// The CPU's strips' failure path: a bf16 product into a bf16 C (which the CPU sums in its threads'
// float32 strips, cpu::uses_strips) on a backend prepared for a 16-bit copy alone (which takes
// none) is refused (FAILED_PRECONDITION, naming the op and the strips) and writes nothing;
// prepared for the product, it runs.
void a_16_bit_product_without_the_strips_is_refused(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (backend_name(g_backend) != "cpu" || !profile_under_test().half_floats) {
    printf("only the cpu backend sums 16-bit products in strips\n");
    skip();
  }
  remat_test::Errors e;
  remat::Backend* backend = small_backend();
  remat_test::Layout layout;
  const remat::TensorRef a = layout.add({2, 3}, REMAT_DTYPE_BF16);
  const remat::TensorRef b = layout.add({3, 4}, REMAT_DTYPE_BF16);
  const remat::TensorRef c = layout.add({2, 4}, REMAT_DTYPE_BF16);
  const remat::TensorRef wide = layout.add({2, 4});
  const std::vector<int64_t> iattrs = {0, 0};  // trans_a, trans_b
  const std::vector<float> fattrs = {1.0f};    // alpha
  const remat::OpCall product =
      remat_test::make_call(remat::OpCode::kMatMul, 7, {&a, &b}, {&c}, iattrs, fattrs);
  const remat::OpCall copy = make_call(remat::OpCode::kCopy, 3, &c, &wide);
  // 1.0 in bfloat16 (0x3F80) everywhere: each element of C is 3.0 (0x4040).
  const std::vector<uint16_t> ones(12, 0x3F80), sentinel(8, 0x7777);
  remat_test::upload(backend, a, ones.data());
  remat_test::upload(backend, b, ones.data());
  remat_test::upload(backend, c, sentinel.data());
  assert_false(remat::cpu::uses_strips(copy));
  assert_true(remat::cpu::uses_strips(product));
  assert_int_equal(backend->prepare(&copy, 1, &e.buf), REMAT_OK);
  const remat::StepContext ctx{kSeed, 0};
  assert_int_equal(backend->run_op(product, ctx, &e.buf), REMAT_ERROR_FAILED_PRECONDITION);
  printf("%s: %s\n", g_backend.c_str(), e.text);
  for (const char* part : {"op 7 (matmul)", "strips"})
    if (strstr(e.text, part) == nullptr) fail_msg("'%s' lacks '%s'", e.text, part);
  std::vector<uint16_t> back(8);
  assert_int_equal(backend->download(c.region, c.offset, back.data(), c.bytes, &e.buf), REMAT_OK);
  assert_true(back == sentinel);
  assert_int_equal(backend->prepare(&product, 1, &e.buf), REMAT_OK);
  assert_int_equal(backend->run_op(product, ctx, &e.buf), REMAT_OK);
  assert_int_equal(backend->download(c.region, c.offset, back.data(), c.bytes, &e.buf), REMAT_OK);
  assert_true(back == std::vector<uint16_t>(8, 0x4040));
  remat::destroy_backend(backend);
}

// The scratch's failure path on the GPU backends (backends/gpu/ops/ops.h: scratch_base): an op
// whose scratch prepare() did not size (reduce_leading's partial column sums: one block of rows
// by 4 columns, 16 bytes; attention's scores) is
// refused (FAILED_PRECONDITION, naming the op and the bytes) and writes nothing; prepared, it
// gives the column sums.
void an_op_without_its_scratch_is_refused(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (backend_name(g_backend) == "cpu") {
    printf("the cpu backend's ops take no scratch from a workspace\n");
    skip();
  }
  remat_test::Errors e;
  remat::Backend* backend = small_backend();
  remat::TensorRef dy = bytes_tensor(remat::Region::kArena, 0, 8 * 4 * 4);
  dy.rank = 2;
  dy.dims[0] = 8;
  dy.dims[1] = 4;
  remat::TensorRef db = bytes_tensor(remat::Region::kArena, 1024, 4 * 4);
  std::vector<float> values(32);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const std::vector<float> sentinel(4, 7.0f);
  std::vector<float> back(4);
  assert_int_equal(backend->upload(dy.region, dy.offset, values.data(), dy.bytes, &e.buf),
                   REMAT_OK);
  assert_int_equal(backend->upload(db.region, db.offset, sentinel.data(), db.bytes, &e.buf),
                   REMAT_OK);
  const remat::OpCall call = make_call(remat::OpCode::kReduceLeading, 5, &dy, &db);
  const remat::StepContext ctx{kSeed, 0};
  assert_int_equal(backend->run_op(call, ctx, &e.buf), REMAT_ERROR_FAILED_PRECONDITION);
  printf("%s: %s\n", g_backend.c_str(), e.text);
  for (const char* part : {"op 5 (reduce_leading)", "16 bytes", "prepare() gave 0"})
    if (strstr(e.text, part) == nullptr) fail_msg("'%s' lacks '%s'", e.text, part);
  assert_int_equal(backend->sync(&e.buf), REMAT_OK);
  assert_int_equal(backend->download(db.region, db.offset, back.data(), db.bytes, &e.buf),
                   REMAT_OK);
  assert_true(back == sentinel);
  assert_int_equal(backend->prepare(&call, 1, &e.buf), REMAT_OK);
  assert_int_equal(backend->run_op(call, ctx, &e.buf), REMAT_OK);
  assert_int_equal(backend->sync(&e.buf), REMAT_OK);
  assert_int_equal(backend->download(db.region, db.offset, back.data(), db.bytes, &e.buf),
                   REMAT_OK);
  // Column j sums j, j + 4, ..., j + 28: 8 j + 112, exact in float.
  for (int j = 0; j < 4; ++j) assert_true(back[static_cast<size_t>(j)] == 8.0f * j + 112.0f);
  remat::destroy_backend(backend);
}

}  // namespace

const struct CMUnitTest kWideningTests[] = {
    cmocka_unit_test(every_op_runs_widened_from_16_bit_floats_bit_for_bit),
    cmocka_unit_test(chunked_and_16_bit_reading_ops_give_the_f32_kernels_bits),
    cmocka_unit_test(every_op_runs_widened_within_the_cases_tolerances),
    cmocka_unit_test(widening_and_narrowing_give_the_scalar_conversions_bits),
    cmocka_unit_test(a_16_bit_op_without_its_workspace_is_refused),
    cmocka_unit_test(a_16_bit_product_without_the_strips_is_refused),
    cmocka_unit_test(an_op_without_its_scratch_is_refused),
};
const size_t kWideningTestCount = sizeof(kWideningTests) / sizeof(kWideningTests[0]);

}  // namespace conformance
