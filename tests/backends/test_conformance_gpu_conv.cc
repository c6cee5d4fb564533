// Backend conformance, the GPUs' convolutions as GEMMs (backends/gpu/ops/conv.cc): over column
// matrices a chunk of images at a time within kGpuConvScratchFloats (plan/gpu_scratch.h), as
// direct kernels past it, and pointwise ones over x and dx in place; against the CPU, each with
// the scratch the compiler counts for it.
#include <stdio.h>

#include <vector>

#include "plan/gpu_scratch.h"
#include "runtime/backend_registry.h"
#include "tests/backends/conformance_harness.h"
#include "tests/backends/op_cases.h"

namespace conformance {
namespace {

using remat::OpCode;

// The GPUs' convolutions of one group run as GEMMs over column matrices a chunk of images at a
// time, while one image's take at most kGpuConvScratchFloats (plan/gpu_scratch.h), and as direct
// kernels past that: at the bound (2x2 filters over 16 channels of 257x257 images, C R S 64 by
// P Q 65536 = 2^22 floats; a weight gradient's dy rows counted too: 15 channels and 4 filters),
// one chunk an image, and one channel past it, in float32 against the CPU, each prepare()
// giving the scratch the bound says (16 MiB at it, none past it). A pointwise conv and its input
// gradient (gpu_conv_pointwise) take none, whatever their size: their GEMMs read x and write dx
// in place; its weight gradient lays its images' columns side by side as any other's; a 1x1
// filter padded (in height alone), or strided, takes columns.
void convolutions_by_columns_match_the_cpu_at_their_scratchs_bound(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (profile_under_test().widening != remat::WideningRule::kGpu &&
      profile_under_test().widening != remat::WideningRule::kGpuHalfOperands) {
    printf("%s: not a GPU backend\n", g_backend.c_str());
    skip();
  }
  // A weight gradient here sums 131,072 products a tap in float32 (the GEMM's order, not the
  // CPU's): the long sums' tolerance.
  const double kMm = 1e-4, kLongSum = 2e-3;
  const std::vector<int64_t> valid = {1, 1, 0, 0, 1, 1, 1}, pointwise = valid;
  const uint64_t bound = uint64_t{4} * static_cast<uint64_t>(remat::kGpuConvScratchFloats);
  const struct {
    remat_test::OpCase c;
    uint64_t scratch;
  } cases[] = {
      {{"conv at the columns' bound",
        OpCode::kConv,
        {{2, 16, 257, 257}, {4, 16, 2, 2}, {4}},
        {{2, 4, 256, 256}},
        valid,
        {},
        kMm},
       bound},
      {{"conv past the columns' bound",
        OpCode::kConv,
        {{2, 17, 257, 257}, {4, 17, 2, 2}},
        {{2, 4, 256, 256}},
        valid,
        {},
        kMm},
       0},
      {{"conv_grad_input at the columns' bound",
        OpCode::kConvGradInput,
        {{2, 4, 256, 256}, {4, 16, 2, 2}},
        {{2, 16, 257, 257}},
        valid,
        {},
        kMm},
       bound},
      {{"conv_grad_input past the columns' bound",
        OpCode::kConvGradInput,
        {{2, 4, 256, 256}, {4, 17, 2, 2}},
        {{2, 17, 257, 257}},
        valid,
        {},
        kMm},
       0},
      {{"conv_grad_weight at the columns' bound",
        OpCode::kConvGradWeight,
        {{2, 4, 256, 256}, {2, 15, 257, 257}},
        {{4, 15, 2, 2}},
        valid,
        {},
        kLongSum},
       bound},
      {{"conv_grad_weight past the columns' bound",
        OpCode::kConvGradWeight,
        {{2, 4, 256, 256}, {2, 16, 257, 257}},
        {{4, 16, 2, 2}},
        valid,
        {},
        kLongSum},
       0},
      {{"conv 1x1 bias, past the columns' bound",
        OpCode::kConv,
        {{2, 65, 256, 256}, {3, 65, 1, 1}, {3}},
        {{2, 3, 256, 256}},
        pointwise,
        {},
        kMm},
       0},
      {{"conv_grad_input 1x1, past the columns' bound",
        OpCode::kConvGradInput,
        {{2, 3, 256, 256}, {3, 65, 1, 1}},
        {{2, 65, 256, 256}},
        pointwise,
        {},
        kMm},
       0},
      {{"conv 1x1 bias",
        OpCode::kConv,
        {{3, 5, 7, 9}, {6, 5, 1, 1}, {6}},
        {{3, 6, 7, 9}},
        pointwise,
        {},
        kMm},
       0},
      {{"conv_grad_input 1x1",
        OpCode::kConvGradInput,
        {{3, 6, 7, 9}, {6, 5, 1, 1}},
        {{3, 5, 7, 9}},
        pointwise,
        {},
        kMm},
       0},
      {{"conv_grad_weight 1x1",
        OpCode::kConvGradWeight,
        {{3, 6, 7, 9}, {3, 5, 7, 9}},
        {{6, 5, 1, 1}},
        pointwise,
        {},
        kMm},
       uint64_t{3} * (5 + 6) * 7 * 9 * 4},
      {{"conv 1x1 padded in height",
        OpCode::kConv,
        {{3, 5, 7, 9}, {6, 5, 1, 1}},
        {{3, 6, 9, 9}},
        {1, 1, 1, 0, 1, 1, 1},
        {},
        kMm},
       uint64_t{3} * 5 * 9 * 9 * 4},
      {{"conv_grad_input 1x1 stride 2",
        OpCode::kConvGradInput,
        {{3, 6, 4, 5}, {6, 5, 1, 1}},
        {{3, 5, 7, 9}, {5 * 4 * 5}},  // the CPU's column workspace of a strided one
        {2, 2, 0, 0, 1, 1, 1},
        {},
        kMm},
       uint64_t{3} * 5 * 4 * 5 * 4},
  };
  const uint64_t arena = uint64_t{1} << 26, kPersistent = 4096;
  static std::vector<uint8_t> arenas[2], persistent[2];
  for (int b = 0; b < 2; ++b) {
    arenas[b].assign(arena, 0);
    persistent[b].assign(kPersistent, 0);
  }
  for (const auto& k : cases) {
    remat::Backend* cpu =
        backend_over("cpu", arenas[0].data(), arena, persistent[0].data(), kPersistent, 1);
    remat::Backend* other =
        backend_over(g_backend, arenas[1].data(), arena, persistent[1].data(), kPersistent, 1);
    remat_test::run_case(k.c, cpu, other, g_backend.c_str());
    const uint64_t used = other->workspace_bytes();
    printf("  %-42s workspace %llu bytes\n", k.c.name, static_cast<unsigned long long>(used));
    if (used != k.scratch || gpu_conv_scratch(k.c) != k.scratch)
      fail_msg("%s: a workspace of %llu bytes (%llu counted), not %llu", k.c.name,
               static_cast<unsigned long long>(used),
               static_cast<unsigned long long>(gpu_conv_scratch(k.c)),
               static_cast<unsigned long long>(k.scratch));
    remat::destroy_backend(cpu);
    remat::destroy_backend(other);
  }
}

}  // namespace

const struct CMUnitTest kGpuConvTests[] = {
    cmocka_unit_test(convolutions_by_columns_match_the_cpu_at_their_scratchs_bound),
};
const size_t kGpuConvTestCount = sizeof(kGpuConvTests) / sizeof(kGpuConvTests[0]);

}  // namespace conformance
