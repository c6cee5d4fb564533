// Backend conformance, the workspace: each backend's (Backend::workspace_bytes, what its
// prepare() obtained for a plan's 16-bit copies and scratch) is the figure `remat compile` states
// and the budgets count (compiler/precision.h: workspace_bytes, op_workspace_bytes), for the
// conformance models and op by op.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/widening.h"
#include "backends/shared/widening_slices.h"
#include "compiler/compiler.h"
#include "compiler/graph.h"
#include "compiler/precision.h"
#include "plan/op_attrs.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/backends/conformance_harness.h"

namespace conformance {
namespace {

// The backend's workspace (Backend::workspace_bytes, what its prepare() obtained) is the figure
// `remat compile` states for it and the budgets count (compile report's workspace_bytes), for
// fp32, bf16 and fp16 plans of every conformance model: on the CPU the most of
// cpu_widening_bytes() over the session's resolved ops (nothing in float32); on a GPU backend the
// most of its ops' widening (backends/gpu/ops/widening.h: gpu_widening_bytes) and scratch
// (attention's scores, column sums' partials: plan/gpu_scratch.h), in float32 too. The widening
// is less than the shared rule's widening_bytes() (every op's tensors whole) where an elementwise
// op had the largest slices (widened a chunk at a time on the CPU's stack, read as they are by
// the GPU kernels), or fused attention, a convolution, a broadcast product or one over a float32
// input's rows (the backends widen attention and the convolutions a chunk of their batch at a
// time, and round such an input a chunk of its rows at a time; the GPUs widen products so too).
void the_workspace_is_the_figure_remat_compile_states(void**) {
  const bool cpu = backend_name(g_backend) == "cpu";
  if (!profile_under_test().half_floats) {
    printf("%s: no 16-bit floats\n", g_backend.c_str());
    skip();
  }
  // A transformer whose feed-forward width (16 times its hidden) makes GELU's gradient the op
  // of the largest 16-bit tensors, which the workspace does not hold (on any backend).
  const char* const wide_ffn =
      "transformer:layers=1,hidden=16,heads=2,ffn=256,seq=8,vocab=40,classes=3";
  // One whose attention gradient's 16-bit tensors (1 MiB an item in float32, 8 items) are widened
  // a chunk of the batch at a time, and would otherwise be the largest.
  const char* const long_attention =
      "transformer:layers=1,hidden=256,heads=4,ffn=256,seq=128,vocab=40,classes=3";
  // One whose attention gradient's (8 MiB an item) and feed-forward products' 16-bit tensors
  // take more than kGpuWideningChunkBytes for the batch: the GPUs widen them in batch chunks.
  const char* const gpu_chunks =
      "transformer:layers=1,hidden=512,heads=4,ffn=2048,seq=512,vocab=40,classes=3";
  std::vector<const char*> models(std::begin(kModels), std::end(kModels));
  models.push_back(wide_ffn);
  models.push_back(long_attention);
  models.push_back(gpu_chunks);
  models.push_back(kBatchChunkedResnet);
  models.push_back(kBatchChunkedUnfused);
  models.push_back(kBatchChunkedMlp);
  for (const char* model : models) {
    for (const char* precision : {"fp32", "bf16", "fp16"}) {
      const bool fp32 = strcmp(precision, "fp32") == 0;
      const std::string strategy = std::string("none/precision=") + precision +
                                   (model == kBatchChunkedUnfused ? "/attention=unfused" : "");
      const remat::compiler::CompileResult compiled =
          compile_result(model, kOptimizers[0], strategy);
      const uint64_t stated = compiled.report.workspace_bytes;
      Run run(model, kOptimizers[0], strategy, g_backend);
      const uint64_t used = run.session->backend->workspace_bytes();
      uint64_t shared = 0, cpu_used = 0;
      for (uint32_t i = 0; i < run.plan->root->ops()->size(); ++i) {
        const remat::OpCall& op = run.session->ops[i];
        // The GPUs' convolutions hold their column matrices' scratch beside the slices.
        shared = std::max(shared, remat::widening_bytes(op) + (cpu ? 0 : gpu_conv_scratch(op)));
        const uint64_t cpu_op = remat::cpu::cpu_widening_bytes(op);
        cpu_used = std::max(cpu_used, cpu_op);
        // Op by op on the CPU (the GPUs': each_ops_workspace_is_what_remat_compile_counts...).
        const uint64_t counted = remat::compiler::op_workspace_bytes(
            compiled.graph, compiled.graph.ops[i], remat::WideningRule::kCpu);
        if (cpu && cpu_op != counted)
          fail_msg("%s, %s: op %u (%s) widens in %llu bytes, remat compile counts %llu", model,
                   precision, i, remat::op_name(op.code), static_cast<unsigned long long>(cpu_op),
                   static_cast<unsigned long long>(counted));
      }
      if (cpu && used != cpu_used)
        fail_msg("%s, %s: the cpu backend obtained %llu bytes, its ops widen in %llu", model,
                 precision, static_cast<unsigned long long>(used),
                 static_cast<unsigned long long>(cpu_used));
      printf("  %s, %s: workspace %llu bytes (every op's slices: %llu)\n", model, precision,
             static_cast<unsigned long long>(used), static_cast<unsigned long long>(shared));
      if (used != stated || (used == 0 && !(cpu && fp32)))
        fail_msg("%s, %s: the %s backend needs %llu bytes, remat compile states %llu", model,
                 precision, g_backend.c_str(), static_cast<unsigned long long>(used),
                 static_cast<unsigned long long>(stated));
      if (fp32) continue;
      if (model == wide_ffn && !(used < shared))
        fail_msg("%s, %s: the workspace holds the elementwise ops' slices", model, precision);
      if (cpu && model == long_attention && !(used < shared))
        fail_msg("%s, %s: the workspace holds attention's whole batch", model, precision);
      if ((model == gpu_chunks || model == kBatchChunkedResnet || model == kBatchChunkedUnfused ||
           model == kBatchChunkedMlp) &&
          !(used < shared))
        fail_msg("%s, %s: the workspace holds the whole batch's slices", model, precision);
    }
  }
}

// The CPU's copies of a 16-bit product's float32 operands, op by op, are what remat compile
// counts (compiler/precision.h: op_workspace_bytes): a float32 input [B, S, F] of a broadcast
// product and of its reduce-mode weight gradient, rounded whole; the same input as [B S, F] rows,
// rounded a chunk of rows at a time (backends/cpu/widening.h: product_chunk_rows), in the product
// and its weight gradient, a sum over the rows. The templates' inputs are rank 2 and reach only
// the latter; an imported nn.Linear over [B, S, F] reaches the former.
void a_products_float32_operands_take_what_remat_compile_counts(void**) {
  if (backend_name(g_backend) != "cpu") {
    printf("%s: the CPU's figures, checked on the cpu backend\n", g_backend.c_str());
    skip();
  }
  namespace m = remat::attr::matmul;
  using remat::compiler::Role;
  const int64_t b = 64, s = 128, f = 256, h = 256;
  const struct {
    const char* name;
    std::vector<int64_t> x, dy;  // the float32 input, and its product's (and gradient's) dims
    bool gradient;               // x^T dy into a float32 weight gradient, else x w into bf16
  } cases[] = {{"broadcast product of [B, S, F]", {b, s, f}, {b, s, h}, false},
               {"its weight gradient", {b, s, f}, {b, s, h}, true},
               {"product of [B S, F] rows", {b * s, f}, {b * s, h}, false},
               {"its weight gradient over the rows", {b * s, f}, {b * s, h}, true}};
  for (const auto& c : cases) {
    remat::compiler::Graph g;
    const int x = g.add_tensor("x", REMAT_DTYPE_F32, c.x, Role::kInput);
    if (c.gradient) {
      const int dy = g.add_tensor("dy", REMAT_DTYPE_BF16, c.dy, Role::kGrad);
      const int dw = g.add_tensor("dw", REMAT_DTYPE_F32, {f, h}, Role::kGrad);
      g.add_op(remat::OpCode::kMatMul, {x, dy}, {dw},
               remat::compiler::named({{m::trans_a, 1}, {m::trans_b, 0}}),
               remat::compiler::named({{m::alpha, 1.0f}}));
    } else {
      const int w = g.add_tensor("w", REMAT_DTYPE_F32, {f, h}, Role::kParam);
      const int y = g.add_tensor("y", REMAT_DTYPE_BF16, c.dy, Role::kActivation);
      g.add_op(remat::OpCode::kMatMul, {x, w}, {y},
               remat::compiler::named({{m::trans_a, 0}, {m::trans_b, 0}}),
               remat::compiler::named({{m::alpha, 1.0f}}));
    }
    // The op as a session resolves it: a TensorRef a tensor, each at an offset of its own.
    std::vector<remat::TensorRef> refs(g.tensors.size());
    for (size_t t = 0; t < g.tensors.size(); ++t) {
      const remat::compiler::Tensor& tensor = g.tensors[t];
      remat::TensorRef& r = refs[t];
      r.region = remat::Region::kArena;
      r.dtype = static_cast<uint8_t>(tensor.dtype);
      r.rank = static_cast<uint8_t>(tensor.shape.size());
      r.offset = static_cast<uint64_t>(t) * 4096;
      r.numel = tensor.numel();
      r.bytes = tensor.bytes();
      for (size_t d = 0; d < tensor.shape.size(); ++d) r.dims[d] = tensor.shape[d];
    }
    const remat::compiler::Op& op = g.ops[0];
    const remat::TensorRef* ins[2] = {&refs[static_cast<size_t>(op.inputs[0])],
                                      &refs[static_cast<size_t>(op.inputs[1])]};
    const remat::TensorRef* outs[1] = {&refs[static_cast<size_t>(op.outputs[0])]};
    remat::OpCall call{};
    call.code = static_cast<uint16_t>(op.code);
    call.num_inputs = 2;
    call.num_outputs = 1;
    call.inputs = ins;
    call.outputs = outs;
    call.iattrs = op.iattrs.data();
    call.num_iattrs = static_cast<uint32_t>(op.iattrs.size());
    call.fattrs = op.fattrs.data();
    call.num_fattrs = static_cast<uint32_t>(op.fattrs.size());
    const uint64_t used = remat::cpu::cpu_widening_bytes(call);
    const uint64_t counted = remat::compiler::op_workspace_bytes(g, op, remat::WideningRule::kCpu);
    printf("  %-36s the cpu copies %llu bytes, remat compile counts %llu\n", c.name,
           static_cast<unsigned long long>(used), static_cast<unsigned long long>(counted));
    if (used != counted || used == 0)
      fail_msg("%s: the cpu copies %llu bytes, remat compile counts %llu", c.name,
               static_cast<unsigned long long>(used), static_cast<unsigned long long>(counted));
  }
}

}  // namespace

const struct CMUnitTest kWorkspaceTests[] = {
    cmocka_unit_test(the_workspace_is_the_figure_remat_compile_states),
    cmocka_unit_test(a_products_float32_operands_take_what_remat_compile_counts),
};
const size_t kWorkspaceTestCount = sizeof(kWorkspaceTests) / sizeof(kWorkspaceTests[0]);

}  // namespace conformance
