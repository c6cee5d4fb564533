// Backend conformance, the GPU kernels that read and write 16-bit tensors as they are
// (plan/ops.h: gpu_reads_16_bit; backends/gpu/kernels/half.cl: load_element, store_element):
// they give the bits of the backend's own float32 kernels over the same values, rounded once
// where an output is 16-bit, as widening the tensors whole gave, and they need no widening
// workspace. And the ops the GPUs widen a chunk of their batch at a time (fused attention and
// broadcast products: backends/gpu/ops/widening.h, gpu_batch_chunk_items) give the CPU's results
// within their tolerance, dropout drawn by each item's index in the whole batch.
#include <stdio.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "backends/gpu/abi.h"
#include "backends/shared/widening_slices.h"
#include "compiler/precision.h"
#include "plan/gpu_scratch.h"
#include "runtime/backend_registry.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/backends/conformance_harness.h"
#include "tests/backends/op_cases.h"
#if REMAT_TEST_HAVE_GPU_HOST
#include "backends/gpu/launcher.h"
#include "backends/gpu/ops/ops.h"
#endif

namespace conformance {
namespace {

constexpr int64_t G = REMAT_GPU_GROUP_SIZE;

// The op cases of the ops the GPU kernels read in 16 bits: every_op_case()'s (layer norm and
// its gradient at the edges of the row teams and the column blocks: tile_cases.cc), with the
// elementwise ops and dropout (four elements a work item) also below, at and past a group and a
// few groups, and bias_add past a group's columns and rows.
std::vector<remat_test::OpCase> cases_read_in_16_bits() {
  std::vector<remat_test::OpCase> cases;
  for (const remat_test::OpCase& c : remat_test::every_op_case()) {
    if (!remat::gpu_reads_16_bit(static_cast<uint16_t>(c.code))) continue;
    cases.push_back(c);
    if (c.code == remat::OpCode::kBiasAdd) {
      for (const std::vector<int64_t>& rows_n :
           std::vector<std::vector<int64_t>>{{3, G - 1}, {2, G}, {G + 1, 5}, {40, 3 * G + 7}}) {
        remat_test::OpCase sized = c;
        sized.in_dims = {rows_n, {rows_n[1]}};
        sized.out_dims = {rows_n};
        cases.push_back(sized);
      }
      continue;
    }
    if (c.in_dims.empty() || c.in_dims[0].size() != 1) continue;  // sized by the tile cases
    for (const int64_t n : {int64_t{1}, G - 1, G, G + 1, 4 * G + 3, int64_t{70001}}) {
      remat_test::OpCase sized = c;
      for (std::vector<int64_t>& dims : sized.in_dims) dims = {n};
      for (std::vector<int64_t>& dims : sized.out_dims) dims = {n};
      cases.push_back(sized);
    }
  }
  return cases;
}

// Every case above in every dtype pattern (all bf16, all f16, mixed with float32), on the
// backend prepared for the float32 call alone (a call that widened would be refused), against
// another backend of the same kind running the float32 kernels over the rounded inputs: the same
// bits.
void ops_read_in_16_bits_give_the_float32_kernels_bits(void**) {
  if (profile_under_test().widening == remat::WideningRule::kWhole ||
      profile_under_test().widening == remat::WideningRule::kCpu) {
    printf("%s: not a GPU backend\n", g_backend.c_str());
    skip();
  }
  BackendPair pair;
  remat::Backend* const* backends = pair.backend;
  size_t runs = 0;
  const std::vector<remat_test::OpCase> cases = cases_read_in_16_bits();
  for (const remat_test::OpCase& c : cases) {
    for (int pattern = 0; pattern < remat_test::kWideningPatterns; ++pattern) {
      remat_test::run_widened_case(c, remat_test::widening_pattern(c, pattern), backends[0],
                                   backends[1], g_backend.c_str(), 0.0, nullptr,
                                   remat_test::Prepared::kTheFloat32Call);
      ++runs;
    }
  }
  // Every op gpu_reads_16_bit() names has a case (so none is left untested).
  for (uint16_t code = 1; code < remat::kOpCodeCount; ++code) {
    if (!remat::gpu_reads_16_bit(code)) continue;
    bool tested = false;
    for (const remat_test::OpCase& c : cases) tested |= static_cast<uint16_t>(c.code) == code;
    if (!tested)
      fail_msg("op %s is read in 16 bits on the GPUs and has no case", remat::op_name(code));
  }
  printf("%zu runs of %zu cases on %s: the float32 kernels' bits, without a workspace\n", runs,
         cases.size(), g_backend.c_str());
}

// Fused attention and products whose 16-bit tensors take more than kGpuWideningChunkBytes in
// float32, all bf16 then all f16 (a broadcast product's weight float32): chunks of 55 of 70 items
// (attention, with dropout, a per-batch mask split with the batch; as rank 0 and as rank 1 of a
// data-parallel run), 31 of 40 (its gradient, a shared mask widened whole for each chunk), 42 or 64
// of 70 (the product, as the backend widens or reads its A). Each on a fresh backend, whose
// widening workspace must be less than the whole call's.
void batch_chunks_match_the_cpu_within_the_cases_tolerances(void**) {
  if (profile_under_test().widening == remat::WideningRule::kWhole ||
      profile_under_test().widening == remat::WideningRule::kCpu) {
    printf("%s: not a GPU backend\n", g_backend.c_str());
    skip();
  }
  const double kMm = 1e-4;
  const remat::OpCode fwd = remat::OpCode::kAttention, grad = remat::OpCode::kAttentionGrad;
  std::vector<remat_test::OpCase> cases;
  cases.push_back({"attention, gpu batch chunks",
                   fwd,
                   {{70, 128, 256}, {70, 128, 256}, {70, 128, 256}, {70, 128, 128}},
                   {{70, 128, 256}, {70, 4, 128}},
                   {4, 5},
                   {0.125f, 0.1f},
                   kMm});
  cases.push_back(cases.back());
  cases.back().name = "attention, gpu batch chunks, rank 1";
  cases.back().rank = 1;
  cases.push_back({"attention_grad, gpu batch chunks",
                   grad,
                   {{40, 128, 256},
                    {40, 128, 256},
                    {40, 128, 256},
                    {40, 128, 256},
                    {40, 128, 256},
                    {40, 4, 128},
                    {128, 128}},
                   {{40, 128, 256}, {40, 128, 256}, {40, 128, 256}},
                   {4, 5},
                   {0.125f, 0.1f},
                   kMm});
  // Chunks of 12 of 24 items whose scores the op holds for 32 heads at a time (two chunks of
  // heads an item), where the whole batch held them for the 24 items of one head: a chunk may
  // need more scratch than the whole call (plan/gpu_scratch.h), and the workspace must hold it
  // beside the chunk's slices.
  cases.push_back({"attention_grad, chunks with more scores",
                   grad,
                   {{24, 256, 320},
                    {24, 256, 320},
                    {24, 256, 320},
                    {24, 256, 320},
                    {24, 256, 320},
                    {24, 40, 256}},
                   {{24, 256, 320}, {24, 256, 320}, {24, 256, 320}},
                   {40, 5},
                   {0.125f, 0.0f},
                   kMm});
  cases.push_back({"matmul broadcast, gpu batch chunks",
                   remat::OpCode::kMatMul,
                   {{70, 256, 256}, {256, 512}},
                   {{70, 256, 512}},
                   {0, 0},
                   {1.0f},
                   kMm});
  // Weight gradients (reduce mode: C = the sum over the batch, float32), each chunk's sum added
  // into C: stacked along K (A transposed, 42 or 28 items a chunk) and entry by entry (170 and
  // 30). A and B of the two 16-bit types, so that CUDA widens them too (GemmEx takes one type).
  // Sums of 17920 and 51200 products: float32 sums in two libraries' orders differ by more than
  // the product cases' usual tolerance.
  const double kLongSum = 2e-3;
  const size_t first_reduce = cases.size();
  cases.push_back({"matmul reduce trans_a, gpu batch chunks",
                   remat::OpCode::kMatMul,
                   {{70, 256, 256}, {70, 256, 512}},
                   {{256, 512}},
                   {1, 0},
                   {1.0f},
                   kLongSum});
  cases.push_back({"matmul reduce, gpu batch chunks",
                   remat::OpCode::kMatMul,
                   {{200, 64, 256}, {200, 256, 128}},
                   {{64, 128}},
                   {0, 0},
                   {1.0f},
                   kLongSum});
  constexpr uint64_t kArena = uint64_t{1} << 27, kPersistent = 4096;
  static std::vector<uint8_t> arenas[2], persistent[2];
  for (int b = 0; b < 2; ++b) {
    arenas[b].resize(kArena);
    persistent[b].resize(kPersistent);
  }
  remat::Backend* cpu =
      backend_over("cpu", arenas[0].data(), kArena, persistent[0].data(), kPersistent);
  for (size_t k = 0; k < cases.size(); ++k) {
    const remat_test::OpCase& c = cases[k];
    const bool product = c.code == remat::OpCode::kMatMul;
    for (int pattern : {0, 1}) {
      std::vector<remat_dtype> floats = remat_test::widening_pattern(c, pattern);
      if (product) floats[1] = REMAT_DTYPE_F32;  // a float32 weight, rounded by the product
      if (k >= first_reduce) {
        const remat_dtype a = pattern == 0 ? REMAT_DTYPE_BF16 : REMAT_DTYPE_F16;
        floats = {a, a == REMAT_DTYPE_BF16 ? REMAT_DTYPE_F16 : REMAT_DTYPE_BF16, REMAT_DTYPE_F32};
      }
      remat::Backend* backend =
          backend_over(g_backend, arenas[1].data(), kArena, persistent[1].data(), kPersistent);
      remat_test::run_widened_case(c, floats, cpu, backend, g_backend.c_str(), c.tol);
      // The workspace less the op's scratch (attention's scores: plan/gpu_scratch.h), from q
      // and k (inputs 0 and 1, or 1 and 2 in the gradient).
      const bool grad_op = c.code == remat::OpCode::kAttentionGrad;
      const std::vector<int64_t>& q = c.in_dims[grad_op ? 1 : 0];
      const std::vector<int64_t>& k = c.in_dims[grad_op ? 2 : 1];
      const uint64_t scratch = product ? 0
                                       : remat::gpu_attention_scratch_bytes(q[0], c.iattrs[0], q[1],
                                                                            k[1], grad_op ? 2 : 1);
      const uint64_t used = backend->workspace_bytes() - scratch;
      const uint64_t whole = whole_widening_bytes(c, floats);
      printf("  %-36s %s: workspace %llu bytes, %llu whole\n", c.name,
             pattern == 0 ? "bf16" : "f16", static_cast<unsigned long long>(used),
             static_cast<unsigned long long>(whole));
      if (!(whole > remat::kGpuWideningChunkBytes && used < whole && used > 0))
        fail_msg("%s: not widened in batch chunks (%llu bytes of %llu)", c.name,
                 static_cast<unsigned long long>(used), static_cast<unsigned long long>(whole));
      remat::destroy_backend(backend);
    }
  }
  remat::destroy_backend(cpu);
}

#if REMAT_TEST_HAVE_GPU_HOST
// A Launcher that launches nothing and takes a matmul's 16-bit operands as CUDA does
// (CudaBackend::takes_half_operands) or as OpenCL does (never): what gpu::workspace_bytes() asks
// of a launcher.
class RuleLauncher final : public remat::gpu::Launcher {
 public:
  explicit RuleLauncher(bool half_operands) : half_operands_(half_operands) {}
  bool takes_half_operands(const remat::OpCall& call) const override {
    return half_operands_ && remat::matmul_operands_of_one_type(call);
  }
  void begin(remat::gpu::KernelId) override {}
  void scalar(const void*, size_t) override {}
  void tensor(const remat::TensorRef&) override {}
  void state() override {}
  void local(size_t) override {}
  remat_status launch(size_t, const remat::OpCall*, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status launch_one_group(const remat::OpCall*, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  size_t group_size(remat::gpu::KernelId) const override { return 256; }
  remat_status zero(const remat::TensorRef&, const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status copy(const remat::TensorRef&, const remat::TensorRef&, const remat::OpCall&,
                    remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status begin_check(const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status end_check(const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status matmul(const remat::OpCall&, bool, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status head_matmul(const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status gemm(const remat::gpu::GemmBatch&, const remat::OpCall&,
                    remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  uint64_t workspace_size() const override { return 0; }
  remat_status spill(const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status prefetch(const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status wait(const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  const remat::gpu::HostStaging& host_staging() const override { return staging_; }
  remat_status read_to_host(const remat::TensorRef&, void*, const remat::OpCall&,
                            remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status write_from_host(const remat::TensorRef&, const void*, const remat::OpCall&,
                               remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  remat_status finish_host_copies(const remat::OpCall&, remat::ErrorBuffer*) override {
    return REMAT_ERROR_UNIMPLEMENTED;
  }
  bool tensors_in_cuda_memory() const override { return true; }
  float* cuda_address(const remat::TensorRef&) const override { return nullptr; }

 private:
  bool half_operands_;
  remat::gpu::HostStaging staging_;
};

// The compiler's figures for the GPUs, op by op, are gpu::workspace_bytes(): for OpenCL
// (WideningRule::kGpu) and for CUDA (kGpuHalfOperands, checked here where no CUDA device runs):
// plans compiled for each (fp32, bf16 and fp16, the conformance models, one that chunks its
// batch and whose weight gradients take two 16-bit operands, a resnet whose convolutions chunk
// theirs, a transformer whose unfused attention does and an mlp whose products over its float32
// input's rows do), their ops resolved by a session on
// the GPU backend under test, each op's workspace asked of a launcher that takes a product's
// operands as that backend does. the_workspace_is_the_figure_remat_compile_states checks the
// backend's own total on the device.
void each_ops_workspace_is_what_remat_compile_counts_for_it_on_the_gpus(void**) {
  if (profile_under_test().widening == remat::WideningRule::kWhole ||
      profile_under_test().widening == remat::WideningRule::kCpu) {
    printf("%s: not a GPU backend\n", g_backend.c_str());
    skip();
  }
  std::vector<const char*> models(std::begin(kModels), std::end(kModels));
  models.push_back("transformer:layers=1,hidden=512,heads=4,ffn=2048,seq=512,vocab=40,classes=3");
  models.push_back(kBatchChunkedResnet);
  models.push_back(kBatchChunkedUnfused);
  models.push_back(kBatchChunkedMlp);
  const struct {
    const char* name;
    remat::WideningRule rule;
  } targets[] = {{"opencl", remat::WideningRule::kGpu},
                 {"cuda", remat::WideningRule::kGpuHalfOperands}};
  for (const auto& target : targets) {
    const RuleLauncher launcher(target.rule == remat::WideningRule::kGpuHalfOperands);
    for (const char* model : models) {
      for (const char* precision : {"fp32", "bf16", "fp16"}) {
        const std::string strategy = std::string("none/precision=") + precision +
                                     "/costs=" + target.name +
                                     (model == kBatchChunkedUnfused ? "/attention=unfused" : "");
        const remat::compiler::CompileResult compiled =
            compile_result(model, kOptimizers[0], strategy);
        Run run(model, kOptimizers[0], strategy, g_backend);
        const uint32_t ops = run.plan->root->ops()->size();
        if (ops != compiled.graph.ops.size())
          fail_msg("%s: %u ops in the plan, %zu in the graph", model, ops,
                   compiled.graph.ops.size());
        uint64_t most = 0;
        for (uint32_t i = 0; i < ops; ++i) {
          const uint64_t stated = remat::compiler::op_workspace_bytes(
              compiled.graph, compiled.graph.ops[i], target.rule);
          const uint64_t used = remat::gpu::workspace_bytes(launcher, run.session->ops[i]);
          if (used != stated)
            fail_msg("%s, %s: op %u (%s) needs %llu bytes on %s, remat compile counts %llu", model,
                     precision, i, remat::op_name(run.session->ops[i].code),
                     static_cast<unsigned long long>(used), target.name,
                     static_cast<unsigned long long>(stated));
          most = std::max(most, used);
        }
        printf("  %s, %s, %s: workspace %llu bytes\n", target.name, model, precision,
               static_cast<unsigned long long>(most));
        if (most != compiled.report.workspace_bytes)
          fail_msg("%s, %s on %s: the ops need %llu bytes, remat compile states %llu", model,
                   precision, target.name, static_cast<unsigned long long>(most),
                   static_cast<unsigned long long>(compiled.report.workspace_bytes));
      }
    }
  }
}
#endif

}  // namespace

const struct CMUnitTest kGpuHalfTests[] = {
    cmocka_unit_test(ops_read_in_16_bits_give_the_float32_kernels_bits),
    cmocka_unit_test(batch_chunks_match_the_cpu_within_the_cases_tolerances),
#if REMAT_TEST_HAVE_GPU_HOST
    cmocka_unit_test(each_ops_workspace_is_what_remat_compile_counts_for_it_on_the_gpus),
#endif
};
const size_t kGpuHalfTestCount = sizeof(kGpuHalfTests) / sizeof(kGpuHalfTests[0]);

}  // namespace conformance
