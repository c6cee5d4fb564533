// Data-parallel training: which gradients the compiler sums over the ranks, in which buckets,
// and where (docs/data-parallel.md).
#ifndef REMAT_COMPILER_DATA_PARALLEL_H_
#define REMAT_COMPILER_DATA_PARALLEL_H_

#include <stdint.h>

namespace remat {
namespace compiler {

/// The default bucket size: PyTorch DDP's bucket_cap_mb.
constexpr uint64_t kDefaultBucketBytes = uint64_t{25} << 20;

/// Most tensors in one bucket: the inputs an allreduce_start takes (plan/op_catalogue.h).
constexpr int kMaxBucketTensors = 8;

/// How a plan sums gradients over the ranks of data-parallel training.
struct DataParallel {
  /// Whether to: the plan then holds allreduce_start / allreduce_wait pairs, and its session
  /// needs a communicator (remat_session_options.communicator).
  bool enabled = false;
  /// A bucket closes once its gradients hold this many bytes (or kMaxBucketTensors tensors),
  /// after the backward op that finished its last gradient, with every other gradient that op
  /// finished (up to kMaxBucketTensors): its allreduce_start follows that op, and its wait, the
  /// finite checks and the updates of its parameters follow the next bucket's start, so that
  /// each bucket's sum overlaps the computation of the next one's gradients. The first bucket
  /// holds the loss too: every rank then has the mean loss, and its finite check, like the
  /// gradients', reads the sum, so that every rank skips the same steps.
  uint64_t bucket_bytes = kDefaultBucketBytes;
};

}  // namespace compiler
}  // namespace remat

#endif  // REMAT_COMPILER_DATA_PARALLEL_H_
