// A remat_communicator over NCCL (docs/data-parallel.md): the ranks' cuda backends sum each
// bucket of gradients where it is, in device memory (REMAT_MEMORY_CUDA), with no host copies.
// NCCL is loaded with dlopen when a communicator opens, as the cuda backend loads cuBLAS, so a
// build with CUDA runs where NCCL is missing until NCCL is asked for; the build needs NCCL's
// header (2.14 or later: non-blocking communicators) for its types.
#ifndef REMAT_COMM_NCCL_COMMUNICATOR_H_
#define REMAT_COMM_NCCL_COMMUNICATOR_H_

#include <stdint.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "remat/remat.h"

namespace remat {
namespace comm {

struct NcclLibrary;  // NCCL's entry points, loaded at the first open() (nccl_communicator.cc)

/// Whether this build can open NCCL: it had CUDA and NCCL's header (NCCL itself is looked for
/// when a communicator opens).
bool nccl_built();

/// NCCL's id of one communicator (ncclUniqueId): made by one rank, given to every rank.
struct NcclId {
  char bytes[128];
};

/// One rank's membership of a NCCL communicator on one CUDA device, and the remat_communicator
/// (REMAT_MEMORY_CUDA) a session of the cuda backend on that device takes. Made in two steps, so
/// that ranks can agree that each could open before any enters NCCL's collective start:
/// open() (local: NCCL loaded, the device, a stream), then connect() (every rank at once).
class NcclCommunicator {
 public:
  /// Loads NCCL (libnccl.so.2, else the one in the folder libcudart was loaded from) and
  /// readies CUDA device |device| (a stream of its own), which becomes the calling thread's
  /// current device; |timeout_seconds|: how long connect() waits for the other ranks and
  /// allreduce_wait for a bucket's sums. Throws std::runtime_error saying what is missing (a
  /// build without CUDA or NCCL's header, NCCL, the device).
  static std::unique_ptr<NcclCommunicator> open(int device, double timeout_seconds);
  /// The device for a rank whose local rank (its rank among the ranks on its machine) is
  /// |local_rank|: that device where the process sees enough, else the local rank modulo the
  /// devices it sees (one visible GPU per rank, as `srun --gpus-per-task=1` gives, is device
  /// 0); |local_rank| where the devices cannot be counted (open() then says why).
  static int device_of_local_rank(int local_rank);
  /// Makes the id of a new NCCL communicator (one rank makes it, every rank connects with it).
  /// Throws std::runtime_error with NCCL's message.
  NcclId new_id() const;
  /// Joins communicator |id| as |rank| of |size|: a collective call of every rank, which returns
  /// once all have joined. Throws std::runtime_error with NCCL's message, or when the others
  /// have not joined within the timeout (NCCL's start aborted).
  void connect(const NcclId& id, int rank, int size);
  /// Waits for the sums in flight, then leaves the communicator (after a failure: aborts it).
  ~NcclCommunicator();

  /// The CUDA device of its sums.
  int device() const { return communicator_.device; }
  /// The communicator for remat_session_options.communicator (after connect()); lives as long
  /// as this. allreduce_start refuses more than 8 arrays (REMAT_ERROR_INVALID_ARGUMENT) and
  /// any call after a failure (REMAT_ERROR_FAILED_PRECONDITION); allreduce_wait refuses a bucket
  /// not started (REMAT_ERROR_FAILED_PRECONDITION), and, when a sum fails or is not done within
  /// the timeout (a rank failed, was killed or stopped), prints why, aborts the NCCL
  /// communicator (so no sum writes the arrays after it returns) and returns
  /// REMAT_ERROR_UNAVAILABLE.
  const remat_communicator* communicator() const { return &communicator_; }

 private:
  struct Bucket {
    void* done;      // cudaEvent_t recorded after the bucket's sums
    bool in_flight;  // started and not yet waited for
  };
  NcclCommunicator() = default;
  static remat_status start(void* user, uint32_t bucket, const remat_buffer* parts,
                            uint32_t count) noexcept;
  static remat_status wait(void* user, uint32_t bucket) noexcept;
  // Prints "remat: rank R of N: WHAT; ..." and aborts the NCCL communicator.
  remat_status give_up(const char* what);

  remat_communicator communicator_{};
  double timeout_seconds_ = 0;
  const NcclLibrary* nccl_ = nullptr;
  void* comm_ = nullptr;    // ncclComm_t
  void* stream_ = nullptr;  // cudaStream_t of the sums
  std::vector<Bucket> buckets_;
  bool failed_ = false;
};

}  // namespace comm
}  // namespace remat

#endif  // REMAT_COMM_NCCL_COMMUNICATOR_H_
