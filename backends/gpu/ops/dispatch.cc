// The GPU dispatch table, the step state, the report of bad data, and the ops that each
// backend does with its own library or queues (matmul, copies between regions).
#include "backends/gpu/ops/ops.h"

#include <string.h>

#include "plan/ops.h"

namespace remat {
namespace gpu {
namespace {

// Both GPU backends implement every op: a catalogue entry without its op here does not
// compile.
constexpr OpTable<Op> make_table() {
  OpTable<Op> t{};
#define REMAT_GPU_OP_ENTRY(Name, snake, code, ...) t.fn[code] = snake;
  REMAT_OP_CATALOGUE(REMAT_GPU_OP_ENTRY)
#undef REMAT_GPU_OP_ENTRY
  return t;
}

constexpr OpTable<Op> kTable = make_table();

}  // namespace

const OpTable<Op>& op_table() { return kTable; }

OpPart op_part(uint16_t code) {
  switch (static_cast<OpCode>(code)) {
    case OpCode::kAttention: return attention_part;
    case OpCode::kAttentionGrad: return attention_grad_part;
    case OpCode::kMatMul:
    case OpCode::kConvGradWeight:
    case OpCode::kChannelSum: return sum_part;
    default: return nullptr;
  }
}

remat_status set_step(Launcher& l, const StepContext& ctx, ErrorBuffer* err) {
  Args a(l, kKernel_set_step);
  a.state().u64(ctx.seed).u64(ctx.step);
  return l.launch(1, nullptr, err);
}

static_assert(static_cast<int>(kGpuInitZeros) == InitDraw::kZeros &&
                  static_cast<int>(kGpuInitOnes) == InitDraw::kOnes &&
                  static_cast<int>(kGpuInitUniform) == InitDraw::kUniform,
              "init_draw's kinds are InitDraw's");

remat_status draw_init(Launcher& l, const TensorRef& t, const InitDraw& d, ErrorBuffer* err) {
  // Zeros cover every byte (an i64 counter is two words); the other rules fill f32 elements.
  const uint64_t words = d.kind == InitDraw::kZeros ? t.bytes / 4 : static_cast<uint64_t>(t.numel);
  Args a(l, kKernel_init_draw);
  a.tensor(t).u64(words).i32(d.kind).f32(d.scale).u64(d.seed).u32(d.tensor);
  return l.launch(static_cast<size_t>((words + 3) / 4), nullptr, err);
}

remat_status finish_check(Launcher& l, const OpCall& call, const TensorRef& values,
                          ErrorBuffer* err) {
  Args a(l, kKernel_report_value);
  a.tensor(values).state().u32(call.index);
  const remat_status status = a.launch(1, call, err);
  return status == REMAT_OK ? l.end_check(call, err) : status;
}

remat_status report_error(const GpuState& s, ErrorBuffer* err) {
  err->failed_op = static_cast<uint32_t>(s.error);
  if (s.error_code == static_cast<uint32_t>(OpCode::kFiniteCheck)) {
    float value;
    memcpy(&value, &s.error_value, sizeof(value));
    return set_error(err, REMAT_ERROR_NONFINITE, "element %d is %g (op %u, finite_check)",
                     s.error_position, static_cast<double>(value),
                     static_cast<unsigned>(s.error - 1));
  }
  const bool label = s.error_code == static_cast<uint32_t>(OpCode::kSoftmaxCrossEntropy) ||
                     s.error_code == static_cast<uint32_t>(OpCode::kSoftmaxCrossEntropyGrad);
  return set_error(err, REMAT_ERROR_OUT_OF_RANGE,
                   "op %u (%s): %s %d at position %d outside [0, %lld)",
                   static_cast<unsigned>(s.error - 1), op_name(static_cast<uint16_t>(s.error_code)),
                   label ? "label" : "id", s.error_value, s.error_position,
                   static_cast<long long>(s.error_limit));
}

remat_status matmul(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  const remat_status status = l.matmul(call, false, err);
  if (status != REMAT_OK || call.num_inputs < 3) return status;
  return add_bias(l, call, *call.outputs[0], *call.inputs[2], *call.outputs[0], err);
}

remat_status head_matmul(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return l.head_matmul(call, err);
}

remat_status spill(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return l.spill(call, err);
}

remat_status prefetch(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return l.prefetch(call, err);
}

remat_status wait(Launcher& l, const OpCall& call, const StepContext&, ErrorBuffer* err) {
  return l.wait(call, err);
}

}  // namespace gpu
}  // namespace remat
