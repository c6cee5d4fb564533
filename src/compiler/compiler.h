// The host compiler's C++ entry point: model string + options -> plan bytes and a report.
#ifndef REMAT_COMPILER_COMPILER_H_
#define REMAT_COMPILER_COMPILER_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "compiler/graph.h"
#include "compiler/planner.h"

namespace remat {
namespace compiler {

/// The spill cost model of one kind of device.
struct SpillCosts {
  double copy_bandwidth;     ///< Host <-> device bytes per second.
  double compute_rate;       ///< FLOPs per second.
  bool asynchronous_copies;  ///< Whether the backend overlaps copies with compute.
};

/// Default spill costs for plans meant for |backend| ("cpu", "opencl", "cuda", with or
/// without ":DEVICE"), documented in docs/spilling.md. Throws CompileError naming |backend|
/// when it is none of those.
SpillCosts default_spill_costs(const std::string& backend);

/// What to compile and how.
struct CompileOptions {
  std::string model;                       ///< Template string (docs/templates.md).
  int64_t batch = 1;                       ///< Batch size.
  std::string optimizer = "sgd:lr=0.01";   ///< Optimizer spec (docs/cli.md).
  uint64_t seed = 0;                       ///< RNG seed for initial params and dropout.
  std::string strategy = "none";           ///< Checkpoint strategy.
  uint64_t budget = 0;                     ///< Arena budget in bytes for strategy "budget".
  uint64_t device_budget = 0;              ///< Arena + persistent bytes to fit by spilling (0: none).
  double copy_bandwidth = 1e10;            ///< Spill cost model: host <-> device bytes per second
                                           ///< (default: default_spill_costs("cpu")).
  double compute_rate = 5e10;              ///< Spill cost model: device FLOPs per second.
  bool asynchronous_copies = false;        ///< Spill cost model: copies overlap compute (not on CPU).
  uint32_t alignment = 64;                 ///< Region alignment (CPU 64, GPUs 256).
};

/// Figures that describe a compiled plan.
struct CompileReport {
  std::string model, strategy, optimizer;
  int64_t batch = 0;
  uint64_t arena_bytes = 0, persistent_bytes = 0, host_bytes = 0, lower_bound = 0;
  uint64_t param_count = 0;               ///< Trainable scalars.
  size_t op_count = 0, tensor_count = 0;
  double forward_flops = 0, step_flops = 0, recomputed_flops = 0;
  std::vector<std::string> checkpoints;   ///< Tensors kept for the backward pass by choice.
  uint64_t device_budget = 0;             ///< The spill budget met (0: none given).
  std::vector<std::string> spilled;       ///< Checkpoints copied to host and back.
  double copy_seconds = 0, hidden_copy_seconds = 0;  ///< Modelled copy time, and what compute hides.
  double copy_bandwidth = 0, compute_rate = 0;       ///< The cost model used.
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
