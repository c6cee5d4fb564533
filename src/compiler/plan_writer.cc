// Graph + memory plan -> FlatBuffers plan bytes.
#include <algorithm>

#include "plan/checksum.h"
#include "plan/plan_generated.h"
#include "compiler/compiler.h"
#include "plan/region.h"

namespace remat {
namespace compiler {
namespace {

// The graph's Role, Init and Phase and remat_dtype are written into the plan by value: each
// must equal the schema's enum, value for value, and have no value the schema lacks.
#define REMAT_SAME_ENUM(ours, theirs) \
  static_assert(static_cast<int>(ours) == static_cast<int>(theirs), #ours " != " #theirs)
REMAT_SAME_ENUM(Role::kInput, fb::Role::Input);
REMAT_SAME_ENUM(Role::kLabel, fb::Role::Label);
REMAT_SAME_ENUM(Role::kParam, fb::Role::Param);
REMAT_SAME_ENUM(Role::kState, fb::Role::State);
REMAT_SAME_ENUM(Role::kGrad, fb::Role::Grad);
REMAT_SAME_ENUM(Role::kActivation, fb::Role::Activation);
REMAT_SAME_ENUM(Role::kCheckpoint, fb::Role::Checkpoint);
REMAT_SAME_ENUM(Role::kScratch, fb::Role::Scratch);
REMAT_SAME_ENUM(Role::kLoss, fb::Role::Loss);
REMAT_SAME_ENUM(Role::kLoss, fb::Role::MAX);
REMAT_SAME_ENUM(Init::kNone, fb::Init::None);
REMAT_SAME_ENUM(Init::kZeros, fb::Init::Zeros);
REMAT_SAME_ENUM(Init::kOnes, fb::Init::Ones);
REMAT_SAME_ENUM(Init::kUniform, fb::Init::Uniform);
REMAT_SAME_ENUM(Init::kNormal, fb::Init::Normal);
REMAT_SAME_ENUM(Init::kData, fb::Init::Data);
REMAT_SAME_ENUM(Init::kData, fb::Init::MAX);
REMAT_SAME_ENUM(Phase::kForward, fb::Phase::Forward);
REMAT_SAME_ENUM(Phase::kBackward, fb::Phase::Backward);
REMAT_SAME_ENUM(Phase::kRecompute, fb::Phase::Recompute);
REMAT_SAME_ENUM(Phase::kUpdate, fb::Phase::Update);
REMAT_SAME_ENUM(Phase::kCopy, fb::Phase::Copy);
REMAT_SAME_ENUM(Phase::kEval, fb::Phase::Eval);
REMAT_SAME_ENUM(Phase::kEval, fb::Phase::MAX);
REMAT_SAME_ENUM(REMAT_DTYPE_F32, fb::DType::F32);
REMAT_SAME_ENUM(REMAT_DTYPE_F16, fb::DType::F16);
REMAT_SAME_ENUM(REMAT_DTYPE_BF16, fb::DType::BF16);
REMAT_SAME_ENUM(REMAT_DTYPE_I32, fb::DType::I32);
REMAT_SAME_ENUM(REMAT_DTYPE_I64, fb::DType::I64);
REMAT_SAME_ENUM(REMAT_DTYPE_I64, fb::DType::MAX);
REMAT_SAME_ENUM(Region::kHost, fb::Region::MAX);
REMAT_SAME_ENUM(MatmulPrecision::kFp32, fb::MatmulPrecision::FP32);
REMAT_SAME_ENUM(MatmulPrecision::kTf32, fb::MatmulPrecision::TF32);
REMAT_SAME_ENUM(MatmulPrecision::kTf32, fb::MatmulPrecision::MAX);
#undef REMAT_SAME_ENUM

}  // namespace

std::vector<uint8_t> write_plan(const Graph& graph, const MemoryPlan& memory,
                                const CompileReport& report, uint64_t seed) {
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  tensors.reserve(graph.tensors.size());
  for (size_t i = 0; i < graph.tensors.size(); ++i) {
    const Tensor& t = graph.tensors[i];
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> init_data;
    if (t.init == Init::kData) {
      fbb.ForceVectorAlignment(t.init_data.size(), sizeof(uint8_t), 16);
      init_data = fbb.CreateVector(t.init_data);
    }
    tensors.push_back(fb::CreateTensor(
        fbb, fbb.CreateString(t.name), static_cast<fb::DType>(t.dtype),
        static_cast<fb::Role>(t.role), static_cast<fb::Region>(memory.region[i]),
        fbb.CreateVector(t.shape), memory.offset[i], t.bytes(), static_cast<fb::Init>(t.init),
        t.init_scale, memory.first_use[i], memory.last_use[i], init_data));
  }
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  ops.reserve(graph.ops.size());
  for (const Op& op : graph.ops) {
    std::vector<uint32_t> in(op.inputs.begin(), op.inputs.end());
    std::vector<uint32_t> out(op.outputs.begin(), op.outputs.end());
    ops.push_back(fb::CreateOp(fbb, static_cast<uint16_t>(op.code), fbb.CreateVector(in),
                               fbb.CreateVector(out), fbb.CreateVector(op.iattrs),
                               fbb.CreateVector(op.fattrs), static_cast<fb::Phase>(op.phase)));
  }
  auto ids = [&](const std::vector<int>& v) {
    return fbb.CreateVector(std::vector<uint32_t>(v.begin(), v.end()));
  };
  std::vector<flatbuffers::Offset<flatbuffers::String>> checkpoints;
  for (const std::string& c : report.checkpoints) checkpoints.push_back(fbb.CreateString(c));
  const auto provenance = fb::CreateProvenance(
      fbb, fbb.CreateString(report.model), static_cast<uint32_t>(report.batch),
      fbb.CreateString(report.strategy), fbb.CreateString(report.optimizer),
      fbb.CreateString("remat " REMAT_VERSION), fbb.CreateVector(checkpoints), report.forward_flops,
      report.recomputed_flops, report.step_flops, memory.lower_bound, report.device_budget,
      static_cast<uint32_t>(report.spilled.size()), report.copy_bandwidth, report.compute_rate,
      report.copy_seconds > 0 ? report.hidden_copy_seconds / report.copy_seconds : 0.0);
  // Dynamic loss scaling: the `scale` ops whose alpha the session sets, found by their outputs.
  flatbuffers::Offset<fb::LossScaling> loss_scaling = 0;
  const LossScalingTensors& l = graph.loss_scaling;
  if (l.scale >= 0) {
    std::vector<uint32_t> scale_ops, unscale_ops;
    const size_t step_ops = graph.ops.size() - graph.eval_ops;
    for (size_t i = 0; i < step_ops; ++i) {
      const Op& op = graph.ops[i];
      if (op.code != OpCode::kScale) continue;
      const int out = op.outputs[0];
      if (std::find(l.scaled.begin(), l.scaled.end(), out) != l.scaled.end())
        scale_ops.push_back(static_cast<uint32_t>(i));
      if (std::find(l.unscaled.begin(), l.unscaled.end(), out) != l.unscaled.end())
        unscale_ops.push_back(static_cast<uint32_t>(i));
    }
    loss_scaling = fb::CreateLossScaling(
        fbb, static_cast<uint32_t>(l.scale), static_cast<uint32_t>(l.clean_steps),
        l.growth_interval, fbb.CreateVector(scale_ops), fbb.CreateVector(unscale_ops));
  }
  const auto tensor_vec = fbb.CreateVector(tensors);
  const auto op_vec = fbb.CreateVector(ops);
  const auto plan = fb::CreatePlan(
      fbb, REMAT_PLAN_FORMAT_VERSION, memory.alignment, memory.arena_size, memory.persistent_size,
      memory.host_size, tensor_vec, op_vec, ids(graph.inputs), ids(graph.labels), ids(graph.params),
      static_cast<uint32_t>(graph.loss), seed, provenance, static_cast<uint32_t>(graph.eval_ops),
      graph.eval_ops > 0 ? static_cast<uint32_t>(graph.eval_loss) : 0, ids(graph.outputs),
      ids(graph.buffers), static_cast<fb::MatmulPrecision>(report.matmul_precision), loss_scaling,
      /*checksum=*/0xFFFFFFFFu);  // not the default, so that the field is stored
  fb::FinishPlanBuffer(fbb, plan);
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  seal_plan(bytes.data(), bytes.size());
  return bytes;
}

}  // namespace compiler
}  // namespace remat
