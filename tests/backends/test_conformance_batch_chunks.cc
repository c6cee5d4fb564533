// Backend conformance, the ops widened a chunk of their batch at a time (backends/shared/
// batch_chunks.h): the convolutions, pooling and the softmax family, which compute each image or
// row alone (plan/ops.h: computes_per_batch_item), the sums over the batch into float32 (a
// conv's weight and bias gradients: sums_over_batch_items, each chunk's sum added into the
// output), and on the GPUs unfused attention's products (head_matmul, a batched matmul) and the
// products over the rows of a rank-2 A (a linear layer's, its input's and weight's gradients). With
// the dtypes a 16-bit plan gives them (images, scores and their gradients 16-bit; filters, bias and
// sums float32) and batches past a chunk, a last chunk shorter: on the CPU, the bits of the
// float32 kernels over the whole batch, on 1, 2 and 3 threads (a chunk shorter than the threads
// takes other paths through the kernels: the bits do not depend on them), a sum within the case's
// tolerance (summed chunk by chunk); on the GPUs, whose chunks are eight times larger
// (kGpuWideningChunkBytes), the CPU's float32 results within the case's tolerance. Each run's
// workspace must be less than the whole call's widening (and on the GPUs a convolution's scratch).
#include <stdio.h>
#include <string.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/shared/widening_slices.h"
#include "runtime/backend_registry.h"
#include "tests/backends/conformance_harness.h"
#include "tests/backends/op_cases.h"

namespace conformance {
namespace {

using remat::OpCode;

// |c| with the leading dim of the tensors its batch chunks split (plan/ops.h: splits_by_batch)
// multiplied by |times|.
remat_test::OpCase with_batch_times(remat_test::OpCase c, int64_t times) {
  const uint16_t code = static_cast<uint16_t>(c.code);
  for (size_t i = 0; i < c.in_dims.size(); ++i) {
    std::vector<int64_t>& dims = c.in_dims[i];
    if (remat::splits_by_batch(code, static_cast<int>(i), false, static_cast<int>(dims.size())))
      dims[0] *= times;
  }
  for (size_t o = 0; o < c.out_dims.size(); ++o) {
    std::vector<int64_t>& dims = c.out_dims[o];
    if (remat::splits_by_batch(code, static_cast<int>(o), true, static_cast<int>(dims.size())))
      dims[0] *= times;
  }
  return c;
}

// The dtypes a 16-bit plan gives |c|'s tensors (all float, inputs then outputs): |half| where
// batch chunks split them (images, scores, activations and their gradients), float32 elsewhere
// (filters, a bias, a sum over the batch, conv_grad_input's workspace).
std::vector<remat_dtype> plan_dtypes(const remat_test::OpCase& c, remat_dtype half) {
  const uint16_t code = static_cast<uint16_t>(c.code);
  std::vector<remat_dtype> floats;
  for (size_t i = 0; i < c.in_dims.size(); ++i) {
    const int rank = static_cast<int>(c.in_dims[i].size());
    floats.push_back(
        remat::splits_by_batch(code, static_cast<int>(i), false, rank) ? half : REMAT_DTYPE_F32);
  }
  for (size_t o = 0; o < c.out_dims.size(); ++o) {
    const int rank = static_cast<int>(c.out_dims[o].size());
    floats.push_back(
        remat::splits_by_batch(code, static_cast<int>(o), true, rank) ? half : REMAT_DTYPE_F32);
  }
  return floats;
}

// Cases whose split tensors take more than the CPU's chunk (kWideningChunkBytes, 4 MiB) in
// float32: 16 of 17 images a chunk for a 3x3 convolution of 8 channels of 64x64 (256 KiB an
// image, input and output), 21 of 23 strided with a bias, and so on. Convolution attributes:
// stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups; pooling: kernel_h,
// kernel_w, stride_h, stride_w, pad_h, pad_w, ceil_mode, then dilations (max) or
// count_include_pad (avg).
std::vector<remat_test::OpCase> spatial_chunk_cases() {
  const double kEw = 1e-5, kMm = 1e-4;
  const std::vector<int64_t> same = {1, 1, 1, 1, 1, 1, 1}, strided = {2, 2, 1, 1, 1, 1, 1};
  // 1x1 at stride 1 unpadded: the GPUs read x and write dx in place (gpu_conv_pointwise).
  const std::vector<int64_t> pointwise = {1, 1, 0, 0, 1, 1, 1};
  return {
      {"conv 1x1 bias, chunks",
       OpCode::kConv,
       {{17, 8, 64, 64}, {8, 8, 1, 1}, {8}},
       {{17, 8, 64, 64}},
       pointwise,
       {},
       kMm},
      {"conv_grad_input 1x1, chunks",
       OpCode::kConvGradInput,
       {{17, 8, 64, 64}, {8, 8, 1, 1}},
       {{17, 8, 64, 64}},
       pointwise,
       {},
       kMm},
      {"conv_grad_weight 1x1, chunks",
       OpCode::kConvGradWeight,
       {{17, 8, 64, 64}, {17, 8, 64, 64}},
       {{8, 8, 1, 1}},
       pointwise,
       {},
       kMm},
      {"conv 3x3, chunks",
       OpCode::kConv,
       {{17, 8, 64, 64}, {8, 8, 3, 3}},
       {{17, 8, 64, 64}},
       same,
       {},
       kMm},
      {"conv 3x3 stride 2 bias, chunks",
       OpCode::kConv,
       {{23, 8, 64, 64}, {16, 8, 3, 3}, {16}},
       {{23, 16, 32, 32}},
       strided,
       {},
       kMm},
      {"conv_grad_input 3x3, chunks",
       OpCode::kConvGradInput,
       {{17, 8, 64, 64}, {8, 8, 3, 3}},
       {{17, 8, 64, 64}},
       same,
       {},
       kMm},
      // A strided input gradient, with its one image's column workspace (not split).
      {"conv_grad_input 3x3 stride 2, chunks",
       OpCode::kConvGradInput,
       {{23, 16, 32, 32}, {16, 8, 3, 3}},
       {{23, 8, 64, 64}, {8 * 9 * 32 * 32}},
       strided,
       {},
       kMm},
      {"conv_grad_weight 3x3, chunks",
       OpCode::kConvGradWeight,
       {{17, 8, 64, 64}, {17, 8, 64, 64}},
       {{8, 8, 3, 3}},
       same,
       {},
       kMm},
      {"conv_grad_weight 3x3 stride 2, chunks",
       OpCode::kConvGradWeight,
       {{23, 16, 32, 32}, {23, 8, 64, 64}},
       {{16, 8, 3, 3}},
       strided,
       {},
       kMm},
      {"channel_sum, chunks", OpCode::kChannelSum, {{33, 8, 64, 64}}, {{8}}, {}, {}, kEw},
      {"max_pool 2x2, chunks",
       OpCode::kMaxPool,
       {{33, 8, 64, 64}},
       {{33, 8, 32, 32}},
       {2, 2, 2, 2, 0, 0, 0},
       {},
       0.0},
      {"max_pool_grad 3x3 pad 1, chunks",
       OpCode::kMaxPoolGrad,
       {{17, 8, 32, 32}, {17, 8, 64, 64}},
       {{17, 8, 64, 64}},
       {3, 3, 2, 2, 1, 1, 0},
       {},
       kEw},
      {"avg_pool 3x3 pad 1, chunks",
       OpCode::kAvgPool,
       {{33, 8, 64, 64}},
       {{33, 8, 32, 32}},
       {3, 3, 2, 2, 1, 1, 0, 1},
       {},
       kEw},
      {"avg_pool_grad 3x3 pad 1, chunks",
       OpCode::kAvgPoolGrad,
       {{33, 8, 32, 32}},
       {{33, 8, 64, 64}},
       {3, 3, 2, 2, 1, 1, 0, 1},
       {},
       kEw},
      {"global_avg_pool, chunks",
       OpCode::kGlobalAvgPool,
       {{33, 8, 64, 64}},
       {{33, 8}},
       {},
       {},
       kEw},
      {"global_avg_pool_grad, chunks",
       OpCode::kGlobalAvgPoolGrad,
       {{33, 8}},
       {{33, 8, 64, 64}},
       {},
       {},
       kEw},
      // Unfused attention's scores, 4 heads of 128 queries and keys: 8 of 17 items a chunk
      // (256 KiB an item a tensor), 5 of 17 for the gradients' three tensors.
      {"softmax, chunks", OpCode::kSoftmax, {{17, 4, 128, 128}}, {{17, 4, 128, 128}}, {}, {}, kEw},
      {"softmax_grad, chunks",
       OpCode::kSoftmaxGrad,
       {{17, 4, 128, 128}, {17, 4, 128, 128}},
       {{17, 4, 128, 128}},
       {},
       {},
       kEw},
      {"log_softmax, chunks",
       OpCode::kLogSoftmax,
       {{17, 4, 128, 128}},
       {{17, 4, 128, 128}},
       {},
       {},
       kEw},
      {"log_softmax_grad, chunks",
       OpCode::kLogSoftmaxGrad,
       {{17, 4, 128, 128}, {17, 4, 128, 128}},
       {{17, 4, 128, 128}},
       {},
       {},
       kEw},
  };
}

// Unfused attention's products, which the GPUs widen in batch chunks and the CPU reads in 16 bits
// as they are: 64 of 70 items a chunk (512 KiB an item). head_matmul's iattrs: trans_a,
// trans_b, heads, interleaved (1: A, 2: B, 4: C); a batched matmul's: trans_a, trans_b.
std::vector<remat_test::OpCase> gpu_product_chunk_cases() {
  const double kMm = 1e-4;
  return {
      {"head_matmul scores, chunks",
       OpCode::kHeadMatMul,
       {{70, 128, 256}, {70, 128, 256}},
       {{70, 4, 128, 128}},
       {0, 1, 4, 3},
       {0.125f},
       kMm},
      {"head_matmul context, chunks",
       OpCode::kHeadMatMul,
       {{70, 4, 128, 128}, {70, 128, 256}},
       {{70, 128, 256}},
       {0, 0, 4, 6},
       {1.0f},
       kMm},
      {"matmul batched, chunks",
       OpCode::kMatMul,
       {{70, 4, 128, 64}, {70, 4, 64, 128}},
       {{70, 4, 128, 128}},
       {0, 0},
       {1.0f},
       kMm},
  };
}

// A product over the rows of a rank-2 A (backends/shared/batch_chunks.h: matmul_rows), which the
// GPUs widen a chunk of rows at a time: 2016 of 2100 rows a chunk (16.25 KiB a row of A and C in
// float32), with the dtypes a 16-bit plan gives its tensors: |a|, |b| and |c| say which are
// 16-bit (an activation, its gradient), the others float32 (a weight, a bias, the network's
// input, a weight gradient). matmul's iattrs: trans_a, trans_b.
struct RowProductCase {
  remat_test::OpCase op;
  bool a, b, c;
};

std::vector<RowProductCase> gpu_row_product_cases() {
  const double kMm = 1e-4;
  return {
      {{"matmul rows with a bias, chunks",
        OpCode::kMatMul,
        {{2100, 4096}, {4096, 64}, {64}},
        {{2100, 64}},
        {0, 0},
        {1.0f},
        kMm},
       true,
       false,
       true},
      {{"matmul rows of a float32 input, chunks",
        OpCode::kMatMul,
        {{2100, 4096}, {4096, 64}},
        {{2100, 64}},
        {0, 0},
        {1.0f},
        kMm},
       false,
       false,
       true},
      {{"matmul rows, the input's gradient, chunks",
        OpCode::kMatMul,
        {{2100, 64}, {4096, 64}},
        {{2100, 4096}},
        {0, 1},
        {1.0f},
        kMm},
       true,
       false,
       true},
      {{"matmul sum over rows, a weight's gradient, chunks",
        OpCode::kMatMul,
        {{2100, 4096}, {2100, 64}},
        {{4096, 64}},
        {1, 0},
        {1.0f},
        kMm},
       true,
       true,
       false},
  };
}

// The CPU's Winograd convolution and weight gradient (32 channels and more), in chunks of 64
// of 67 images.
std::vector<remat_test::OpCase> winograd_chunk_cases() {
  const double kMm = 1e-4;
  const std::vector<int64_t> same = {1, 1, 1, 1, 1, 1, 1};
  return {
      {"conv winograd, chunks",
       OpCode::kConv,
       {{67, 32, 16, 16}, {32, 32, 3, 3}},
       {{67, 32, 16, 16}},
       same,
       {},
       kMm},
      {"conv_grad_weight winograd, chunks",
       OpCode::kConvGradWeight,
       {{67, 32, 16, 16}, {67, 32, 16, 16}},
       {{32, 32, 3, 3}},
       same,
       {},
       kMm},
  };
}

// A sum over the batch, which the CPU's chunks add up chunk by chunk: within the case's
// tolerance of the whole batch's float32 sum, not its bits.
bool sums_chunk_by_chunk(const remat::OpCall& call) {
  return remat::sums_over_batch_items(call.code);
}

void ops_in_batch_chunks_give_the_whole_batchs_results(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const remat::DeviceProfile& profile = profile_under_test();
  if (!profile.half_floats || profile.widening == remat::WideningRule::kWhole) {
    printf("%s: no 16-bit floats, or every call widened whole\n", g_backend.c_str());
    skip();
  }
  const bool cpu = profile.widening == remat::WideningRule::kCpu;
  std::vector<remat_test::OpCase> cases;
  for (const remat_test::OpCase& c : spatial_chunk_cases()) {
    cases.push_back(cpu ? c : with_batch_times(c, 8));
    // On the GPUs a weight gradient is a float32 sum of 557,056 products (136 images of 64x64)
    // in one work item, in order: it differs from the CPU's sum in another order by more than
    // the case's usual tolerance (as the GPU's reduce-mode products do).
    if (!cpu && cases.back().code == OpCode::kConvGradWeight) cases.back().tol = 2e-3;
  }
  for (const remat_test::OpCase& c : cpu ? winograd_chunk_cases() : gpu_product_chunk_cases())
    cases.push_back(c);
  // The CPU's products over rows: tests/ops/test_ops_half_products.cc, to the bit.
  const std::vector<RowProductCase> row_products =
      cpu ? std::vector<RowProductCase>{} : gpu_row_product_cases();
  for (const RowProductCase& r : row_products) cases.push_back(r.op);
  const uint64_t arena = cpu ? uint64_t{1} << 25 : uint64_t{1} << 27, kPersistent = 4096;
  static std::vector<uint8_t> arenas[2], persistent[2];
  for (int b = 0; b < 2; ++b) {
    arenas[b].assign(arena, 0);
    persistent[b].assign(kPersistent, 0);
  }
  size_t runs = 0;
  for (uint32_t threads = 1; threads <= (cpu ? 3u : 1u); ++threads) {
    for (const remat_test::OpCase& c : cases) {
      for (const remat_dtype half : {REMAT_DTYPE_BF16, REMAT_DTYPE_F16}) {
        std::vector<remat_dtype> floats = plan_dtypes(c, half);
        // Widened whole, a product's float32 operands take slices too (rounded to its type).
        std::vector<remat_dtype> whole_dtypes = floats;
        for (const RowProductCase& r : row_products) {
          if (strcmp(r.op.name, c.name) != 0) continue;
          const bool halves[] = {r.a, r.b};
          for (size_t i = 0; i < 2; ++i) {
            floats[i] = halves[i] ? half : REMAT_DTYPE_F32;
            whole_dtypes[i] = half;
          }
          floats.back() = r.c ? half : REMAT_DTYPE_F32;
          whole_dtypes.back() = floats.back();
        }
        remat::Backend* backends[2] = {nullptr, nullptr};
        for (int b = 0; b < 2; ++b)
          backends[b] = backend_over(b == 0 ? "cpu" : g_backend, arenas[b].data(), arena,
                                     persistent[b].data(), kPersistent, threads);
        remat_test::run_widened_case(c, floats, backends[0], backends[1], g_backend.c_str(),
                                     cpu ? 0.0 : c.tol, cpu ? sums_chunk_by_chunk : nullptr);
        const uint64_t used = backends[1]->workspace_bytes();
        // The GPUs' convolutions hold their column matrices' scratch beside the slices.
        const uint64_t whole =
            whole_widening_bytes(c, whole_dtypes) + (cpu ? 0 : gpu_conv_scratch(c));
        if (!(used > 0 && used < whole))
          fail_msg("%s in %s: a workspace of %llu bytes, the whole call's %llu", c.name,
                   half == REMAT_DTYPE_F16 ? "f16" : "bf16", static_cast<unsigned long long>(used),
                   static_cast<unsigned long long>(whole));
        if (threads == 1)
          printf("  %-40s %s: workspace %llu bytes, %llu whole\n", c.name,
                 half == REMAT_DTYPE_F16 ? "f16" : "bf16", static_cast<unsigned long long>(used),
                 static_cast<unsigned long long>(whole));
        remat::destroy_backend(backends[0]);
        remat::destroy_backend(backends[1]);
        ++runs;
      }
    }
  }
  printf("%zu runs of %zu cases on %s\n", runs, cases.size(), g_backend.c_str());
}

// A resnet whose first stage's convolutions widen 5 of the 8 images of kBatch at a time on the
// CPU (800 KiB an image for a convolution's input and output in float32), their weight gradients
// summed chunk by chunk, a transformer whose unfused attention's softmax and its gradient
// widen 2 and 1 of them (1 MiB of scores an item), and an mlp whose first layer's product and
// weight gradient round two rows of its float32 input at a time (1.5 MiB a row; the weight
// gradient summed chunk by chunk), train at bf16 and fp16 under sqrt, selective
// and a spilling plan to the bytes of --strategy none at the same precision (parameters and
// buffers), their losses finite. The CPU's test: the GPUs chunk at eight times the size (checked
// op by op above and by the_workspace_is_the_figure_remat_compile_states).
void models_whose_ops_chunk_train_under_every_strategy_as_under_none(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (profile_under_test().widening != remat::WideningRule::kCpu) {
    printf("%s: its chunks are checked op by op\n", g_backend.c_str());
    skip();
  }
  const struct {
    const char* model;
    const char* options;
    uint64_t most_workspace;  // widened whole, the largest ops would take at least twice this
    bool spills;              // whether a spilling plan fits 95 % of its arena
  } models[] = {{"resnet:depth=8,width=16,in=3x80x80,classes=4", "", uint64_t{5} << 20, true},
                {"transformer:layers=2,hidden=64,heads=4,ffn=64,seq=256,vocab=40,classes=3",
                 "/attention=unfused", uint64_t{5} << 20, true},
                // A 16-bit copy of the first layer's weight (3 MiB) and of two rows of the input
                // (the whole input's would take 6 MiB); its activations (4 values a row) are too
                // small to spill 5 % of its arena.
                {"mlp:layers=2,width=4,in=393216,classes=4", "", uint64_t{5} << 20, false}};
  const std::string optimizer = kOptimizers[1];
  for (const auto& m : models) {
    const std::string model = m.model;
    for (const std::string precision : {"bf16", "fp16"}) {
      const std::string p = "/precision=" + precision + m.options;
      const remat::compiler::CompileReport none = compile_report(model, optimizer, "none" + p);
      if (!(none.workspace_bytes > 0 && none.workspace_bytes < m.most_workspace))
        fail_msg("%s, %s: a workspace of %llu bytes", m.model, precision.c_str(),
                 static_cast<unsigned long long>(none.workspace_bytes));
      // 95 % of the arena of the plan of split points, beside its persistent region and workspace.
      std::vector<std::string> strategies = {"sqrt", "selective"};
      if (m.spills) {
        const remat::compiler::CompileReport splits =
            compile_report(model, optimizer, "splits" + p);
        const uint64_t device =
            splits.persistent_bytes + splits.workspace_bytes + splits.arena_bytes * 95 / 100;
        strategies.push_back("splits/device=" + std::to_string(device));
        if (compile_report(model, optimizer, strategies.back() + p).spilled.empty())
          fail_msg("%s, %s: nothing spilled at a device budget of %llu", m.model, precision.c_str(),
                   static_cast<unsigned long long>(device));
      }
      std::vector<float> losses;
      const std::vector<uint8_t> reference =
          train(model, optimizer, "none" + p, g_backend, true, &losses);
      for (const float loss : losses) {
        if (!std::isfinite(loss))
          fail_msg("%s, %s: a loss of %g", m.model, precision.c_str(), loss);
      }
      for (const std::string& strategy : strategies) {
        if (train(model, optimizer, strategy + p, g_backend, true) != reference)
          fail_msg("%s at %s: --strategy %s differs from --strategy none", m.model,
                   precision.c_str(), strategy.c_str());
        printf("%s, %s, %s: as none (workspace %llu bytes)\n", m.model, precision.c_str(),
               strategy.c_str(), static_cast<unsigned long long>(none.workspace_bytes));
      }
    }
  }
}

}  // namespace

const struct CMUnitTest kBatchChunkTests[] = {
    cmocka_unit_test(ops_in_batch_chunks_give_the_whole_batchs_results),
    cmocka_unit_test(models_whose_ops_chunk_train_under_every_strategy_as_under_none),
};
const size_t kBatchChunkTestCount = sizeof(kBatchChunkTests) / sizeof(kBatchChunkTests[0]);

}  // namespace conformance
