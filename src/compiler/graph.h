// The compiler's graph IR: named tensors with roles, and ops in execution order.
#ifndef REMAT_COMPILER_GRAPH_H_
#define REMAT_COMPILER_GRAPH_H_

#include <stdint.h>

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plan/op_attrs.h"
#include "plan/ops.h"
#include "remat/remat.h"

namespace remat {
namespace compiler {

/// Most tensors and ops of one graph, recomputed copies and spill slots included: the memory
/// planner's time and memory grow as n log n, and a graph this size takes about a minute and
/// several gigabytes to plan. Templates refuse deeper models earlier, naming the key.
constexpr size_t kMaxGraphTensors = size_t{1} << 22;
constexpr size_t kMaxGraphOps = size_t{1} << 22;

/// Thrown for a model, option or graph that cannot be compiled; what() names the culprit.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Role of a tensor; values equal remat.fb.Role in the plan schema (checked in plan_writer.cc).
enum class Role : uint8_t {
  kInput = 0,
  kLabel = 1,
  kParam = 2,
  kState = 3,
  kGrad = 4,
  kActivation = 5,
  kCheckpoint = 6,
  kScratch = 7,
  kLoss = 8,
};

/// How a persistent tensor starts; values equal remat.fb.Init (checked in plan_writer.cc).
enum class Init : uint8_t {
  kNone = 0,
  kZeros = 1,
  kOnes = 2,
  kUniform = 3,
  kNormal = 4,
  kData = 5
};

/// Part of the step an op belongs to; values equal remat.fb.Phase (checked in plan_writer.cc).
enum class Phase : uint8_t {
  kForward = 0,
  kBackward = 1,
  kRecompute = 2,
  kUpdate = 3,
  kCopy = 4,
  kEval = 5
};

/// A tensor of the graph.
struct Tensor {
  std::string name;            ///< Unique name; parameters use PyTorch state_dict names.
  remat_dtype dtype;           ///< Element type.
  std::vector<int64_t> shape;  ///< Dims, outermost first.
  Role role;                   ///< What the tensor is for.
  Init init = Init::kNone;     ///< Initial value (params and state).
  float init_scale = 0.0f;     ///< Uniform half-width or normal standard deviation.
  bool host = false;           ///< Lives in the host spill region (a spill slot).
  /// Initial bytes (init kData: an imported model's weights), bytes() of them.
  std::vector<uint8_t> init_data;

  /// Number of elements.
  int64_t numel() const;
  /// Size in bytes.
  uint64_t bytes() const;
};

/// An op of the graph: an opcode from plan/ops.h applied to tensors by index.
struct Op {
  OpCode code;                  ///< What the op computes.
  std::vector<int> inputs;      ///< Tensor indices read.
  std::vector<int> outputs;     ///< Tensor indices written.
  std::vector<int64_t> iattrs;  ///< Integer attributes (plan/op_catalogue.h).
  std::vector<float> fattrs;    ///< Float attributes (plan/op_catalogue.h).
  Phase phase = Phase::kForward;
  /// Index of the forward op this op derives from (itself for forward ops): a recomputed or
  /// backward op names its source, which reports and recompute use.
  int source = -1;
  /// Estimated floating-point operations, for reports and strategies.
  double flops = 0.0;

  /// Attribute |a| (attr::OP::NAME) of this op, counted when the graph took it.
  int64_t attr(IntAttr a) const { return iattrs[a.index]; }
  float attr(FloatAttr a) const { return fattrs[a.index]; }
};

/// An attribute list written by name, {{attr::select::axis, 1}, {attr::select::index, 0}}:
/// each value at its attribute's index, whatever the order; every attribute must be given
/// (Graph::add_op checks the count).
std::vector<int64_t> named(std::initializer_list<std::pair<IntAttr, int64_t>> values);
std::vector<float> named(std::initializer_list<std::pair<FloatAttr, float>> values);

/// The running statistics of one batch_norm forward op (torch's buffers of a BatchNorm
/// module): the step updates them after the backward pass (running_stat_update), the eval
/// program normalises with them (batch_norm_inference).
struct BatchNormBuffers {
  int op = -1;                   ///< Index of the batch_norm forward op.
  int running_mean = -1;         ///< Persistent [C], starts at zeros.
  int running_var = -1;          ///< Persistent [C], starts at ones.
  int num_batches_tracked = -1;  ///< Persistent i64 [1], starts at zero.
  float momentum = 0.1f;         ///< torch's momentum.
};

/// Dynamic loss scaling of a graph (compiler/loss_scaling.h; plan.fbs, LossScaling): its state
/// tensors and the `scale` ops whose alpha the session sets, found by their outputs.
struct LossScalingTensors {
  int scale = -1;                ///< Persistent f32 [1], role kState: the scale S.
  int clean_steps = -1;          ///< Persistent i64 [1], role kState: finite steps since S changed.
  uint32_t growth_interval = 0;  ///< Finite steps in a row after which S doubles.
  std::vector<int> scaled;       ///< Outputs of the `scale` ops by S (the loss op's input grads).
  std::vector<int> unscaled;     ///< Outputs of the `scale` ops by 1 / S (parameter gradients).
};

/// A training graph: forward ops, then (after autodiff and the optimizer) backward and update
/// ops. Tensors are never removed; indices stay valid.
class Graph {
 public:
  /// Adds a tensor; throws CompileError when |name| is taken or a dim is not positive.
  int add_tensor(const std::string& name, remat_dtype dtype, std::vector<int64_t> shape, Role role,
                 Init init = Init::kNone, float init_scale = 0.0f);
  /// Appends an op after checking it with plan/op_check (throws CompileError naming the
  /// op and tensors when it is malformed). Returns the op's index.
  int add_op(OpCode code, std::vector<int> inputs, std::vector<int> outputs,
             std::vector<int64_t> iattrs = {}, std::vector<float> fattrs = {},
             Phase phase = Phase::kForward, int source = -1);
  /// Index of the tensor named |name|, or -1.
  int find(const std::string& name) const;
  /// |hint| when no tensor has that name, else the first free |hint|#1, |hint|#2, ...
  std::string unique_name(const std::string& hint) const;

  std::vector<Tensor> tensors;  ///< All tensors, by index.
  std::vector<Op> ops;          ///< All ops, in execution order.
  std::vector<int> inputs;      ///< Input bindings (role kInput).
  std::vector<int> labels;      ///< Label bindings (role kLabel).
  std::vector<int> params;      ///< Trainable parameters, in creation order.
  int loss = -1;                ///< The scalar loss.
  /// The eval program (compiler/eval_program.h): the last |eval_ops| ops, which a step does
  /// not run; its loss and the outputs the caller reads after it (none: -1 and empty).
  size_t eval_ops = 0;
  int eval_loss = -1;
  std::vector<int> outputs;
  /// Every batch_norm forward op's running statistics, in forward order.
  std::vector<BatchNormBuffers> batch_norms;
  /// Persistent state the caller reads and writes by name (torch's buffers), role kState.
  std::vector<int> buffers;
  /// Dynamic loss scaling (scale < 0: none).
  LossScalingTensors loss_scaling;
  /// Tensors holding a parameter's gradient, a part or a scaled copy of one: the arena's
  /// weight-sized tensors, which a 16-bit plan keeps in float32 (reports split the arena by it).
  std::vector<int> param_grads;

 private:
  std::unordered_map<std::string, int> names_;  // for find()
};

/// Estimated flops of |op| in |graph| (2*M*N*K for matmuls, a few per element otherwise).
double estimate_flops(const Graph& graph, const Op& op);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_GRAPH_H_
