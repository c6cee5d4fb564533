// Backend conformance, the ops every backend runs on 16-bit tensors without widening them: the
// data movement ops whose tensors share one dtype move their bytes (backends/shared/
// widening_slices.h: moves_bytes), embedding writes its 16-bit out and its gradient reads its
// 16-bit dy as they are, dropout its input and output, and batch norm its [N, C, ...] tensors
// (plan/ops.h: reads_16_bit_as_it_is; backends/cpu/widening.h: writes_16_bit_output,
// reads_16_bit_input; the GPUs' typed kernels). They need no workspace, which is why a 16-bit
// plan's workspace does not grow with its batch (tests/compiler/test_budget.cc), and give the
// float32 kernels' bits.
#include <stdio.h>
#include <string.h>

#include <vector>

#include "backends/shared/widening_slices.h"
#include "plan/half_float.h"
#include "runtime/backend_registry.h"
#include "tests/backends/conformance_harness.h"
#include "tests/backends/op_cases.h"

namespace conformance {
namespace {

// |c| with its last dim (every tensor's whose last dim is |from|) set to |to|.
remat_test::OpCase with_last_dim(remat_test::OpCase c, int64_t from, int64_t to) {
  for (auto* list : {&c.in_dims, &c.out_dims}) {
    for (std::vector<int64_t>& dims : *list) {
      if (!dims.empty() && dims.back() == from) dims.back() = to;
    }
  }
  return c;
}

// The data movement ops (every_op_case()'s, and select, slice and concat over rows of an odd
// count of 16-bit elements, which the GPUs copy a byte at a time) with all tensors bf16, then all
// f16; dropout and its gradient in bf16 and in f16 around the CPU's chunk of 1024 and past its
// thread grain; embedding with a float32 table and a 16-bit out, its gradient with a 16-bit dy and
// a float32 dtable, batch norm with 16-bit [N, C, ...] tensors and float32 per-channel ones (as a
// 16-bit plan has them), at rows of 8 elements and below, at and past the CPU's chunk of 1024
// (kChannelChunk): each on a backend prepared for the float32 call alone (a call that widened
// would be refused), the bits of the float32 kernels over the rounded inputs. A mixed pattern of
// a movement op still widens.
void rows_read_as_they_are_need_no_workspace_and_give_the_float32_bits(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (!profile_under_test().half_floats) {
    printf("%s runs float32 tensors only\n", g_backend.c_str());
    skip();
  }
  BackendPair pair;
  std::vector<remat_test::OpCase> moves, embeddings, norms, dropouts;
  for (const remat_test::OpCase& c : remat_test::every_op_case()) {
    if (remat::moves_elements(static_cast<uint16_t>(c.code))) moves.push_back(c);
    if (c.code == remat::OpCode::kDropout || c.code == remat::OpCode::kDropoutGrad) {
      for (const int64_t n : {int64_t{1023}, int64_t{1025}, int64_t{70001}}) {
        remat_test::OpCase sized = c;
        sized.in_dims = {{n}};
        sized.out_dims = {{n}};
        dropouts.push_back(sized);
      }
    }
    if (c.code == remat::OpCode::kBatchNorm || c.code == remat::OpCode::kBatchNormGrad ||
        c.code == remat::OpCode::kBatchNormInference)
      norms.push_back(c);
    if (c.code != remat::OpCode::kEmbedding && c.code != remat::OpCode::kEmbeddingGrad) continue;
    embeddings.push_back(c);
    for (const int64_t h : {int64_t{3}, int64_t{1023}, int64_t{1024}, int64_t{1025}, int64_t{3000}})
      embeddings.push_back(with_last_dim(c, 8, h));
  }
  for (const remat_test::OpCase& c : remat_test::batch_norm_row_cases()) norms.push_back(c);
  moves.push_back(
      {"select, odd rows", remat::OpCode::kSelect, {{5, 9, 33}}, {{5, 33}}, {1, 0}, {}, 0.0});
  moves.push_back(
      {"slice, odd rows", remat::OpCode::kSlice, {{2, 5, 3}}, {{2, 2, 3}}, {1, 1}, {}, 0.0});
  moves.push_back({"concat, odd rows",
                   remat::OpCode::kConcat,
                   {{3, 1, 3}, {3, 2, 3}},
                   {{3, 3, 3}},
                   {1},
                   {},
                   0.0});
  size_t runs = 0;
  for (const remat_test::OpCase& c : moves) {
    for (int pattern = 0; pattern < 2; ++pattern) {
      const std::vector<remat_dtype> floats = remat_test::widening_pattern(c, pattern);
      if (!remat_test::call_of_case_is(c, remat::moves_bytes, floats))
        fail_msg("%s in pattern %d does not move bytes", c.name, pattern);
      remat_test::run_widened_case(c, floats, pair.backend[0], pair.backend[1], g_backend.c_str(),
                                   0.0, nullptr, remat_test::Prepared::kTheFloat32Call);
      ++runs;
    }
    if (remat_test::call_of_case_is(c, remat::moves_bytes, remat_test::widening_pattern(c, 2)))
      fail_msg("%s with bf16 and f32 tensors moves bytes", c.name);
  }
  for (const remat_test::OpCase& c : dropouts) {
    for (int pattern = 0; pattern < 2; ++pattern) {
      remat_test::run_widened_case(c, remat_test::widening_pattern(c, pattern), pair.backend[0],
                                   pair.backend[1], g_backend.c_str(), 0.0, nullptr,
                                   remat_test::Prepared::kTheFloat32Call);
      ++runs;
    }
  }
  for (const remat_test::OpCase& c : embeddings) {
    const bool grad = c.code == remat::OpCode::kEmbeddingGrad;
    for (const remat_dtype half : {REMAT_DTYPE_BF16, REMAT_DTYPE_F16}) {
      // Float tensors: the lookup's table and out, the gradient's dy and dtable.
      const std::vector<remat_dtype> floats = grad
                                                  ? std::vector<remat_dtype>{half, REMAT_DTYPE_F32}
                                                  : std::vector<remat_dtype>{REMAT_DTYPE_F32, half};
      remat_test::run_widened_case(c, floats, pair.backend[0], pair.backend[1], g_backend.c_str(),
                                   0.0, nullptr, remat_test::Prepared::kTheFloat32Call);
      ++runs;
    }
  }
  for (const remat_test::OpCase& c : norms) {
    const uint16_t code = static_cast<uint16_t>(c.code);
    for (const remat_dtype half : {REMAT_DTYPE_BF16, REMAT_DTYPE_F16}) {
      // The [N, C, ...] tensors 16-bit, the per-channel ones float32.
      std::vector<remat_dtype> floats;
      for (size_t i = 0; i < c.in_dims.size(); ++i)
        floats.push_back(remat::reads_16_bit_as_it_is(code, static_cast<int>(i), false)
                             ? half
                             : REMAT_DTYPE_F32);
      for (size_t o = 0; o < c.out_dims.size(); ++o)
        floats.push_back(
            remat::reads_16_bit_as_it_is(code, static_cast<int>(o), true) ? half : REMAT_DTYPE_F32);
      remat_test::run_widened_case(c, floats, pair.backend[0], pair.backend[1], g_backend.c_str(),
                                   0.0, nullptr, remat_test::Prepared::kTheFloat32Call);
      ++runs;
    }
  }
  printf("%zu runs of %zu cases on %s: the float32 kernels' bits, without a workspace\n", runs,
         moves.size() + embeddings.size() + norms.size() + dropouts.size(), g_backend.c_str());
}

// A 16-bit tensor of every pattern moved by select and permute keeps every pattern's bits, NaNs
// with payloads and signaling NaNs too (widening would quieten a signaling NaN): the bytes move,
// nothing is converted.
void a_move_keeps_every_16_bit_pattern(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (!profile_under_test().half_floats) {
    printf("%s runs float32 tensors only\n", g_backend.c_str());
    skip();
  }
  BackendPair pair;
  remat::Backend* backend = pair.backend[1];
  constexpr int64_t kPatterns = 65536;
  // x: [2, 256, 256], row 0 every pattern reversed, row 1 every pattern in order.
  std::vector<uint16_t> x(2 * kPatterns);
  for (int64_t i = 0; i < kPatterns; ++i) {
    x[static_cast<size_t>(i)] = static_cast<uint16_t>(kPatterns - 1 - i);
    x[static_cast<size_t>(kPatterns + i)] = static_cast<uint16_t>(i);
  }
  for (const remat_dtype dtype : {REMAT_DTYPE_BF16, REMAT_DTYPE_F16}) {
    remat::TensorRef in{}, out{};
    in.region = out.region = remat::Region::kArena;
    in.dtype = out.dtype = dtype;
    in.rank = 3;
    in.dims[0] = 2;
    in.dims[1] = in.dims[2] = 256;
    in.numel = 2 * kPatterns;
    in.bytes = static_cast<uint64_t>(in.numel) * 2;
    out.offset = in.bytes;
    out.rank = 2;
    out.dims[0] = out.dims[1] = 256;
    out.numel = kPatterns;
    out.bytes = kPatterns * 2;
    remat_test::Errors e;
    if (backend->upload(remat::Region::kArena, 0, x.data(), in.bytes, &e.buf) != REMAT_OK)
      fail_msg("upload: %s", e.text);
    // select index 1 of axis 0: row 1 as it is; permute of row 0 as [256, 256], transposed.
    const int64_t select_attrs[] = {0, 1}, permute_attrs[] = {2, 256, 256, 1, 0};
    remat::TensorRef row0 = out;
    row0.offset = 0;
    for (const bool permute : {false, true}) {
      remat::OpCall call = make_call(permute ? remat::OpCode::kPermute : remat::OpCode::kSelect, 0,
                                     permute ? &row0 : &in, &out);
      call.iattrs = permute ? permute_attrs : select_attrs;
      call.num_iattrs = permute ? 5 : 2;
      if (!remat::moves_bytes(call)) fail_msg("%s does not move bytes", remat::op_name(call.code));
      if (backend->prepare(&call, 1, &e.buf) != REMAT_OK) fail_msg("prepare: %s", e.text);
      const remat::StepContext ctx{kSeed, 1};
      if (backend->run_op(call, ctx, &e.buf) != REMAT_OK || backend->sync(&e.buf) != REMAT_OK)
        fail_msg("%s: %s", permute ? "permute" : "select", e.text);
      std::vector<uint16_t> y(kPatterns);
      if (backend->download(remat::Region::kArena, out.offset, y.data(), out.bytes, &e.buf) !=
          REMAT_OK)
        fail_msg("download: %s", e.text);
      for (int64_t i = 0; i < kPatterns; ++i) {
        const int64_t from = permute ? (i % 256) * 256 + i / 256 : kPatterns + i;
        const uint16_t want = x[static_cast<size_t>(from)];
        if (y[static_cast<size_t>(i)] != want)
          fail_msg("%s of %s: element %lld is 0x%04x, the input's 0x%04x",
                   permute ? "permute" : "select", dtype == REMAT_DTYPE_F16 ? "f16" : "bf16",
                   static_cast<long long>(i), y[static_cast<size_t>(i)], want);
      }
    }
    printf("  %s: select and permute keep all %lld patterns\n",
           dtype == REMAT_DTYPE_F16 ? "f16" : "bf16", static_cast<long long>(kPatterns));
  }
}

}  // namespace

const struct CMUnitTest kHalfAsIsTests[] = {
    cmocka_unit_test(rows_read_as_they_are_need_no_workspace_and_give_the_float32_bits),
    cmocka_unit_test(a_move_keeps_every_16_bit_pattern),
};
const size_t kHalfAsIsTestCount = sizeof(kHalfAsIsTests) / sizeof(kHalfAsIsTests[0]);

}  // namespace conformance
