// `remat train` of a data-parallel plan: how its ranks sum (--communicator) and which device
// each rank's backend is (docs/data-parallel.md).
#ifndef REMAT_CLI_RANK_COMMUNICATOR_H_
#define REMAT_CLI_RANK_COMMUNICATOR_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "remat/remat.h"

namespace remat {
namespace cli {

/// What a rank joins with and where it runs.
struct RankCommunicator {
  /// comm::MpiWorld::join()'s |nccl_device|: kNoNccl (MPI's sums in host memory), a CUDA
  /// device, or kLocalRankDevice.
  int nccl_device;
  /// NCCL on backend "cuda", without a device number: each rank takes the device NCCL's
  /// communicator opened, its local rank's (its rank among the ranks on its machine), one GPU
  /// per rank as NCCL asks.
  bool device_per_rank;
  /// NCCL was picked by default (no --communicator): a failure to open it says how to do
  /// without.
  bool nccl_by_default;
};

/// For --backend |backend| and --communicator |communicator| ("" when not given: nccl on the
/// cuda backend of a build that can open NCCL, mpi otherwise). Throws UsageError for a communicator
/// that is neither mpi nor nccl, nccl with a backend other than cuda, or a malformed cuda device
/// number.
RankCommunicator rank_communicator(const std::string& backend, const std::string& communicator);

/// How a rank's sums go, for `remat train`'s data-parallel line: "NCCL on cuda:D", or "MPI" and,
/// where |backend| hands MPI host copies of the buckets (OpenCL, CUDA), the host memory they take
/// for the verified data-parallel plan |plan| (plan/allreduce_slots.h's rule, which `remat size
/// --data-parallel` reports too).
std::string sums_description(const remat_communicator& c, const std::string& backend,
                             const std::vector<uint8_t>& plan);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_RANK_COMMUNICATOR_H_
