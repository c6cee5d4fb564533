// What `remat size` computes: the figures of one (strategy, batch) plan, and the largest batch
// whose plan fits a device budget. The figures come from compiler::compile(), the same code
// that writes the plan the runtime binds, so they are exact.
#ifndef REMAT_CLI_SIZING_H_
#define REMAT_CLI_SIZING_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace remat {
namespace cli {

/// What every row of one `remat size` run shares.
struct SizeSetup {
  std::string model;  ///< Template string, aliases already expanded, or FILE.onnx.
  std::string loss;   ///< An ONNX model's --loss ("" for a template).
  std::string optimizer = "sgd:lr=0.1";  ///< Optimizer spec (persistent state depends on it).
  uint32_t alignment = compiler::CompileOptions().alignment;  ///< Region alignment.
  /// The budgets, as in every command (docs/sizing.md, "Budgets").
  /// --arena-budget: arena bytes the `budget` and `auto` rows fit; 0: derived from device_budget.
  uint64_t arena_budget = 0;
  /// --device-budget: arena + persistent + workspace bytes; 0 when none was given. Rows
  /// must fit it (the fits column, the --max-batch search), spilling checkpoints to host where
  /// host_budget lets them; without --arena-budget, `budget` and `auto` get this minus the
  /// persistent bytes and the workspace (the compiler works it out for each batch).
  uint64_t device_budget = 0;
  /// --host-budget: host spill bytes a row may use to fit device_budget; 0: no row spills;
  /// UINT64_MAX: no limit (--device-budget without --host-budget).
  uint64_t host_budget = 0;
  /// False under the deprecated `size --budget`, whose rows spilled only for `auto`.
  bool fixed_rows_spill = true;
  /// Spill cost model, passed to the compiler as given: host <-> device bytes per second
  /// (--copy-bandwidth, else --backend's default).
  double copy_bandwidth = compiler::CompileOptions().copy_bandwidth;
  /// Device FLOPs per second (--compute-rate, else --backend's default).
  double compute_rate = compiler::CompileOptions().compute_rate;
  /// Whether --backend overlaps copies with compute (docs/spilling.md).
  bool asynchronous_copies = compiler::CompileOptions().asynchronous_copies;
  /// How --backend widens 16-bit tensors (its workspace: compiler/precision.h).
  WideningRule widening = compiler::CompileOptions().widening;
  /// --finite-checks: the non-finite guard (atomic keeps gradients alive until the updates).
  compiler::FiniteChecks finite_checks = compiler::CompileOptions().finite_checks;
  /// --eval-program: whether plans carry an eval program (its arena counts when larger).
  bool eval_program = compiler::CompileOptions().eval_program;
  /// --attention: a template's attention fused into one op, or not.
  compiler::AttentionKernel attention = compiler::CompileOptions().attention;
  /// --precision: how activations are stored (16-bit plans have smaller arenas).
  compiler::Precision precision = compiler::CompileOptions().precision;
  /// --loss-scale ("" for the precision's default).
  std::string loss_scale;
  /// --data-parallel [--bucket-size SIZE]: plans that average gradients over ranks (each
  /// gradient lives until its bucket's sum is done: docs/data-parallel.md).
  compiler::DataParallel data_parallel;
};

/// The figures of one plan, or why it could not be compiled.
struct SizeRow {
  std::string strategy;
  int64_t batch = 0;
  compiler::Precision precision = compiler::Precision::kFp32;  ///< The setup's.
  std::string error;  ///< Non-empty: compiling failed; the figures are zero.
  /// When `auto` found no schedule that fits: device bytes of the smallest it planned (else 0).
  uint64_t smallest_device_bytes = 0;
  uint64_t arena_bytes =
      0;  ///< Arena region: activations, checkpoints, gradients, scratch, inputs.
  uint64_t persistent_bytes = 0;  ///< Persistent region: params + optimizer state + loss.
  uint64_t param_bytes = 0;       ///< Part of persistent_bytes holding parameters.
  uint64_t state_bytes = 0;       ///< Part of persistent_bytes holding optimizer state.
  uint64_t host_bytes = 0;        ///< Host spill region (host memory, not device).
  /// The backend's workspace beside the arena (compiler/precision.h: workspace_bytes).
  uint64_t workspace_bytes = 0;
  /// Host memory a GPU backend's session of a data-parallel plan takes for its buckets' copies
  /// (plan/allreduce_slots.h); 0 for any other plan, and on the CPU backend.
  uint64_t allreduce_host_bytes = 0;
  size_t spills = 0;         ///< Checkpoints spilled to the host region.
  uint64_t lower_bound = 0;  ///< Largest sum of arena bytes live at one op.
  /// At the op where the most step bytes are live: their sum, and the part that is weight-sized
  /// (parameter gradients, float32 at every precision; the rest is activations, their
  /// gradients and scratch).
  uint64_t peak_live_bytes = 0, peak_param_grad_bytes = 0;
  uint64_t arena_budget = 0;  ///< Arena budget given to the `budget` and `auto` rows (else 0).
  double step_flops = 0, recomputed_flops = 0;
  double predicted_seconds = 0;  ///< Modelled step time (compiler/strategies/auto.h's cost model).
  std::vector<std::string> nested;       ///< Nested checkpoints (auto).
  std::vector<std::string> checkpoints;  ///< Tensors kept by choice (empty for `none`).
  size_t op_count = 0;                   ///< Ops of the plan, the eval program's included.
  size_t eval_ops = 0;                   ///< The last ops, the eval program's (docs/eval.md).
  size_t backward_start = 0;             ///< Index of the first op that is not a forward op.
  /// Arena bytes live at each op of the step (for the timeline; the eval program, placed apart
  /// in the same arena, is not drawn).
  std::vector<uint64_t> live_bytes;

  bool ok() const { return error.empty(); }
  /// Bytes the device holds: arena + persistent + workspace (host spill lives in host
  /// memory).
  uint64_t device_bytes() const { return arena_bytes + persistent_bytes + workspace_bytes; }
  /// lower_bound / arena_bytes (1 when the arena is empty).
  double efficiency() const;
  /// recomputed_flops / step_flops.
  double recomputed_share() const;
  /// predicted_seconds / batch (0 without a batch).
  double seconds_per_sample() const;
};

/// Whether |strategy| is given the arena budget (`budget` and `auto`), and so needs
/// --arena-budget or --device-budget.
bool takes_arena_budget(const std::string& strategy);

/// Compile options for |strategy| at |batch|: exactly what size_row() compiles, so a caller
/// can compile the plan a row describes. |arena_budget| is passed to the `budget` and `auto`
/// strategies; every row gets the device budget when the host budget allows spills.
compiler::CompileOptions size_options(const SizeSetup& setup, const std::string& strategy,
                                      int64_t batch, uint64_t arena_budget);

/// Persistent bytes of |setup|'s model and optimizer (they depend on neither batch nor strategy),
/// compiled at |batch|: one the model takes (a batch norm over a 1 x 1 map needs 2 or more, a
/// fixed-batch ONNX export its own).
uint64_t persistent_bytes(const SizeSetup& setup, int64_t batch);

/// Compiles |setup|'s model at |batch| with |strategy| and returns its figures; a CompileError
/// becomes the row's error. For `budget` and `auto`, |arena_budget| is the compiler's arena
/// budget; |smallest| asks `auto` for its smallest fitting schedule instead of its fastest.
SizeRow size_row(const SizeSetup& setup, const std::string& strategy, int64_t batch,
                 uint64_t arena_budget = 0, bool smallest = false);

/// Result of a max-batch search for one strategy.
struct MaxBatch {
  SizeRow row;          ///< Figures at the batch found (row.batch; 0 when even |lo| does not fit).
  bool capped = false;  ///< The search reached |hi| and it still fit.
  int compiles = 0;     ///< Plans compiled by the search.
  uint64_t over_bytes = 0;  ///< Device bytes at row.batch + 1 (0 when capped or not compiled).
};

/// Largest batch in [|lo|, |hi|] whose plan compiles and has device_bytes() <= |budget|:
/// doubling from |lo| until a batch does not fit, then shrinking the bracket (a linear guess
/// from the two ends, bisection when the guess does not halve it). The answer b always has a
/// compiled plan that fits at b and, unless capped, one that does not at b + 1. A batch whose
/// compile fails counts as not fitting, except at |lo|, where the error is the result's.
/// `auto` is probed for its smallest fitting schedule (anything fits iff that does), and the
/// row is its fastest schedule at the batch found.
MaxBatch find_max_batch(const SizeSetup& setup, const std::string& strategy, int64_t lo, int64_t hi,
                        uint64_t budget, uint64_t arena_budget = 0);

/// "a, b, ..., z (N in all)" for long checkpoint lists; "(all activations kept)" when empty.
std::string checkpoints_text(const std::vector<std::string>& checkpoints, size_t max_chars);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_SIZING_H_
