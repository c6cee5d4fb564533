// The host compiler's C++ entry point: model string + options -> plan bytes and a report.
#ifndef REMAT_COMPILER_COMPILER_H_
#define REMAT_COMPILER_COMPILER_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_profile.h"
#include "backends/device_profile.h"
#include "compiler/data_parallel.h"
#include "compiler/finite_checks.h"
#include "compiler/graph.h"
#include "compiler/loss_scaling.h"
#include "compiler/attention_kernel.h"
#include "compiler/matmul_precision.h"
#include "compiler/precision.h"
#include "compiler/planner.h"

namespace remat {
namespace compiler {

/// The profile of the backend plans are made for: |backend| is "cpu", "opencl", "cuda", ...
/// with or without ":DEVICE" (backends/device_profiles.h; docs/spilling.md has the figures).
/// Throws CompileError naming |backend| and the known backends when it names none.
const DeviceProfile& target_profile(const std::string& backend);

/// What to compile and how.
struct CompileOptions {
  std::string model;  ///< Template string (docs/templates.md) or FILE.onnx (docs/onnx.md).
  std::string loss;   ///< An ONNX model's loss: "cross_entropy", "mse" or "" (none).
  int64_t batch = 1;  ///< Batch size.
  std::string optimizer =
      "sgd:lr=0.1";               ///< Optimizer spec (docs/cli.md): plain SGD, so that the default
                                  ///< adds no state; every template learns visibly with it.
  uint64_t seed = 0;              ///< RNG seed for initial params and dropout.
  std::string strategy = "none";  ///< Checkpoint strategy.
  /// The three budgets (docs/sizing.md, "Budgets"): each means one quantity everywhere.
  uint64_t arena_budget = 0;  ///< Arena bytes strategies "budget" and "auto" fit (0: none).
  /// Arena + persistent + workspace bytes to fit by spilling (0: none).
  uint64_t device_budget = 0;
  uint64_t host_budget =
      UINT64_MAX;  ///< Host spill bytes strategy "auto" may use (0: no spilling).
  /// Strategy "auto" returns the fitting schedule with the fewest device bytes, not the
  /// fastest (a max-batch search's question: does anything fit, and how much room is left).
  bool auto_smallest = false;
  /// Spill cost model: host <-> device bytes per second (default: the CPU's profile).
  double copy_bandwidth = kCpuProfile.copy_bandwidth;
  /// Spill cost model: device FLOPs per second.
  double compute_rate = kCpuProfile.compute_rate;
  /// Spill cost model: copies overlap compute (not on the CPU).
  bool asynchronous_copies = kCpuProfile.asynchronous_copies;
  /// Region alignment: the target backend's (CPU 64, GPUs 256).
  uint32_t alignment = kCpuProfile.alignment;
  /// How the target backend widens 16-bit tensors, which sets its workspace (precision.h).
  WideningRule widening = kCpuProfile.widening;
  /// The non-finite guard (compiler/finite_checks.h).
  FiniteChecks finite_checks = FiniteChecks::kOn;
  /// Whether the plan carries an eval program (compiler/eval_program.h).
  bool eval_program = true;
  /// The matrix products' precision the plan asks for (compiler/matmul_precision.h).
  MatmulPrecision matmul_precision = MatmulPrecision::kFp32;
  /// The dtype of activations, checkpoints, spill slots and their gradients
  /// (compiler/precision.h).
  Precision precision = Precision::kFp32;
  /// Dynamic loss scaling (compiler/loss_scaling.h): "off", "dynamic[:init=S][,interval=N]",
  /// or "" for the precision's default (dynamic for fp16, off otherwise).
  std::string loss_scale;
  /// The ops a template's attention compiles to (compiler/attention_kernel.h), and an ONNX
  /// model's multi-head attention where it matches the pattern of docs/onnx.md (kUnfused, and
  /// any other attention, keeps the ops it was exported with).
  AttentionKernel attention = AttentionKernel::kFused;
  /// Data-parallel training: gradients summed over the ranks in buckets
  /// (compiler/data_parallel.h).
  DataParallel data_parallel;

  /// Plans for |profile|'s device: takes its alignment, spill cost model and widening.
  void target(const DeviceProfile& profile) {
    copy_bandwidth = profile.copy_bandwidth;
    compute_rate = profile.compute_rate;
    asynchronous_copies = profile.asynchronous_copies;
    alignment = profile.alignment;
    widening = profile.widening;
  }
};

/// Figures that describe a compiled plan.
struct CompileReport {
  std::string model, strategy, optimizer;
  int64_t batch = 0;
  uint64_t arena_bytes = 0, persistent_bytes = 0, host_bytes = 0, lower_bound = 0;
  uint64_t param_count = 0;               ///< Trainable scalars.
  size_t op_count = 0, tensor_count = 0;  ///< The eval program's included.
  size_t eval_ops = 0;                    ///< Ops of the eval program (0: none).
  double forward_flops = 0, step_flops = 0,
         recomputed_flops = 0;           ///< Of a step (the eval program's apart).
  std::vector<std::string> checkpoints;  ///< Tensors kept for the backward pass by choice.
  std::vector<std::string>
      nested;  ///< Nested checkpoints (auto): recomputed once per segment, then held.
  double predicted_seconds = 0;  ///< Modelled step time: FLOPs / compute rate + copy stalls.
  size_t schedules_planned = 0;  ///< Schedules the strategy planned for real (auto).
  bool exhaustive = false;       ///< The auto search tried every assignment.
  uint64_t arena_budget = 0;     ///< The arena budget given (0: none).
  MatmulPrecision matmul_precision = MatmulPrecision::kFp32;  ///< What the plan asks for.
  Precision precision = Precision::kFp32;                     ///< How activations are stored.
  std::string loss_scale = "off";  ///< "off", or "dynamic:init=S,interval=N".
  size_t allreduce_buckets = 0;    ///< Data-parallel buckets of a step (0: not data-parallel).
  /// The target backend's workspace for this plan (compiler/precision.h: workspace_bytes),
  /// beside the arena on the same device: float32 copies of one op's 16-bit tensors and, on the
  /// GPUs, an op's scratch. A device budget counts it.
  uint64_t workspace_bytes = 0;
  size_t fused_attention_ops = 0;  ///< attention ops in the plan's forward pass.
  /// The device budget (arena + persistent + workspace) met (0: none given).
  uint64_t device_budget = 0;
  uint64_t host_budget = UINT64_MAX;  ///< The host spill budget given (UINT64_MAX: none).
  std::vector<std::string> spilled;   ///< Checkpoints copied to host and back.
  double copy_seconds = 0,
         hidden_copy_seconds = 0;               ///< Modelled copy time, and what compute hides.
  double copy_bandwidth = 0, compute_rate = 0;  ///< The cost model used.
  std::vector<std::string>
      warnings;  ///< What the user should know (an import's renamed parameters).
};

/// A compiled plan: FlatBuffers bytes, the graph and memory plan it came from, and its report.
struct CompileResult {
  std::vector<uint8_t> plan;
  Graph graph;
  MemoryPlan memory;
  CompileReport report;
};

/// Compiles |options|; throws CompileError with a message naming what is wrong.
CompileResult compile(const CompileOptions& options);

/// Serialises |graph| placed by |memory| as a plan (src/plan/plan.fbs).
std::vector<uint8_t> write_plan(const Graph& graph, const MemoryPlan& memory,
                                const CompileReport& report, uint64_t seed);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_COMPILER_H_
