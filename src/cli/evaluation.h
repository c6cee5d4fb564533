// `remat train`'s evaluation: the plan's eval program over held-out batches.
#ifndef REMAT_CLI_EVALUATION_H_
#define REMAT_CLI_EVALUATION_H_

#include <stdint.h>

#include "cli/batches.h"
#include "remat/remat.h"

namespace remat {
namespace cli {

/// What one pass of the eval program over a set of batches gave.
struct EvalResult {
  double loss = 0;            ///< Mean of the batches' losses (every batch is full).
  int64_t samples = 0;        ///< Rows evaluated.
  int64_t correct = 0;        ///< Rows whose largest logit is at their label.
  bool has_accuracy = false;  ///< The plan's output is [B, C] logits of an i32 [B] label.
};

/// Runs |session|'s eval program (remat_session_eval) on batches 0 .. |count| - 1 of |batches|
/// (of |batch| samples each) and counts, where the plan's output and label allow it, the rows
/// classified right (the first largest logit, NaN largest, as torch.argmax). Leaves the inputs
/// set to the last batch; throws Failure naming the batch when a call fails.
EvalResult evaluate(remat_session* session, const remat_plan* plan, const Batches& batches,
                    int64_t count, int64_t batch);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_EVALUATION_H_
