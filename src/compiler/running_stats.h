// The step's updates of batch norm running statistics (torch's buffers).
#ifndef REMAT_COMPILER_RUNNING_STATS_H_
#define REMAT_COMPILER_RUNNING_STATS_H_

#include "compiler/graph.h"

namespace remat {
namespace compiler {

/// Appends to |graph|, after its backward pass and optimizer updates, one running_stat_update
/// of the running mean and one of the running variance, and one increment of
/// num_batches_tracked, per batch norm of graph.batch_norms, as
/// torch updates them in a training forward pass (the variance unbiased: times M / (M - 1),
/// M values per channel). They read the forward op's batch statistics once per step, so a
/// recomputed batch norm does not update them again; they run after every finite check, so a
/// non-finite step leaves them as they were. Throws CompileError for a batch norm with one
/// value per channel (torch refuses it in training too).
void append_running_stat_updates(Graph& graph);

/// Data-parallel training (compiler/data_parallel.h): after the updates of the running
/// statistics, buckets that average each running mean and variance over the ranks (the
/// average of the ranks' updates is the update with the mean of their batch statistics, since
/// the update is linear), so that every rank keeps the same buffers, as it keeps the same
/// parameters. Numbered after the gradients' buckets; nothing follows them to overlap.
void average_running_stats(Graph& graph);

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_RUNNING_STATS_H_
