// A remat_communicator over MPI (docs/data-parallel.md): the ranks of MPI_COMM_WORLD sum each
// bucket with MPI_Allreduce on a thread of its own, so that the sum of one bucket overlaps the
// computation of the next bucket's gradients whatever progress the MPI library makes by itself.
#ifndef REMAT_COMM_MPI_COMMUNICATOR_H_
#define REMAT_COMM_MPI_COMMUNICATOR_H_

#include <stdint.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "comm/nccl_communicator.h"
#include "remat/remat.h"

namespace remat {
namespace comm {

/// Whether this build has MPI (meson -Dmpi); without it, MpiWorld::join() throws.
bool mpi_available();

/// What MpiWorld::join() throws when MPI was initialised (or finalised) in the process already:
/// MPI starts once per process.
class MpiStartedAlready : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What MpiWorld::join() throws when a rank cannot open NCCL or NCCL's start fails (MPI itself
/// started).
class NcclUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The process's membership of MPI_COMM_WORLD and the communicator a session takes. One per
/// process: join() initialises MPI. Every collective call, the buckets' sums and the agreements
/// between steps (same_everywhere(), highest_everywhere()) alike, runs on the communicator's
/// thread in the order it was asked for, so no two threads call MPI at once (as
/// MPI_THREAD_SERIALIZED asks) and every wait for another rank has the timeout. The destructor
/// finalises MPI.
class MpiWorld {
 public:
  /// join()'s |nccl_device| for sums through MPI in host memory, NCCL unused.
  static constexpr int kNoNccl = -2;
  /// join()'s |nccl_device| for the device of the rank's local rank (its rank among those on
  /// its machine; NcclCommunicator::device_of_local_rank).
  static constexpr int kLocalRankDevice = -1;

  /// Initialises MPI (MPI_THREAD_SERIALIZED);
  /// |timeout_seconds|: how long a wait waits for a bucket's sum or an agreement (a rank that
  /// failed, was killed or stopped never sends its part) before it ends the whole job with a
  /// message, since the sum may still write the arena if that rank comes back. With a CUDA
  /// device for |nccl_device| (or kLocalRankDevice), the buckets are summed by NCCL in that
  /// device's memory instead (communicator() is then NCCL's, REMAT_MEMORY_CUDA; a wait that
  /// times out aborts NCCL's communicator and fails the step), once every rank opened NCCL.
  /// Throws MpiStartedAlready when MPI was initialised (or finalised) already,
  /// std::runtime_error when MPI is missing, fails to start or gives less than
  /// MPI_THREAD_SERIALIZED, NcclUnavailable when a rank cannot open NCCL or NCCL's start fails
  /// (MPI left finalised then), std::bad_alloc or std::system_error (no thread; MPI finalised).
  static std::unique_ptr<MpiWorld> join(double timeout_seconds, int nccl_device = kNoNccl);
  /// Stops the sums' thread and finalises MPI.
  ~MpiWorld();

  /// This process's rank in MPI_COMM_WORLD.
  int rank() const { return communicator_.rank; }
  /// The number of ranks.
  int size() const { return communicator_.size; }
  /// Whether |value| is the same on every rank: a collective call every rank makes while no step
  /// runs; |what| names the value in the message that ends the job after the timeout.
  bool same_everywhere(uint64_t value, const char* what);
  /// The highest |value| of every rank (a collective call, as same_everywhere()).
  uint64_t highest_everywhere(uint64_t value, const char* what);
  /// The communicator for remat_session_options.communicator (NCCL's when join() opened it);
  /// lives as long as this.
  const remat_communicator* communicator() const {
    return nccl_ ? nccl_->communicator() : &communicator_;
  }
  /// Ends every rank's run at once after a failure, with exit code |code|: this process exits
  /// unfinalised, which makes mpirun end the others.
  [[noreturn]] static void abort_all(int code);

 private:
  MpiWorld() = default;
  /// The most arrays one bucket's sum takes (remat_communicator::allreduce_start's |count|).
  static constexpr uint32_t kMaxParts = 8;
  /// One collective call for the communicator's thread: a bucket's sum (|count| |parts|), or
  /// the minimum or maximum of |*value| over the ranks. Held by value, so queuing one allocates
  /// nothing once the queue has held as many jobs at once before.
  struct Job {
    enum Kind { kSum, kMin, kMax } kind;
    uint32_t bucket;
    uint32_t count;
    remat_buffer parts[kMaxParts];
    unsigned long long* value;
  };
  // The communicator's callbacks, called through C (libremat, -fno-exceptions): nothing thrown.
  static remat_status start(void* user, uint32_t bucket, const remat_buffer* parts,
                            uint32_t count) noexcept;
  static remat_status wait(void* user, uint32_t bucket) noexcept;
  // Queues |job| and returns its number, counted from 1; a sum's number is recorded as its
  // bucket's last (last_sum_) under the same lock. Throws std::bad_alloc with nothing queued.
  uint64_t queue(const Job& job);
  // Waits until job |number| is done, or ends the job after the timeout naming what it waited
  // for: the agreement on |agreement_on|, or, when that is null, the sum of |bucket|.
  void wait_for(uint64_t number, const char* agreement_on, uint32_t bucket);
  uint64_t agree(unsigned long long value, Job::Kind kind, const char* what);
  void run();  // the communicator's thread: makes the calls in the order they were queued
  // Opens NCCL on |device| on every rank, agrees that all could, and connects them (join()).
  void join_nccl(int device);

  remat_communicator communicator_{};
  double timeout_seconds_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  // The jobs not yet taken, in order: a ring of ring_.size() slots from ring_[head_], grown
  // (doubled) only when full, so a step allocates nothing after the first.
  std::vector<Job> ring_;
  size_t head_ = 0, pending_ = 0;
  uint64_t queued_ = 0, done_ = 0;         // jobs queued and done, over the whole run
  std::map<uint32_t, uint64_t> last_sum_;  // per bucket, the number of its last sum's job
  bool stopping_ = false;
  bool mpi_initialised_ = false;  // by join(): the destructor finalises MPI
  int local_rank_ = 0;            // among the ranks on this machine (MPI_COMM_TYPE_SHARED)
  std::unique_ptr<NcclCommunicator> nccl_;  // NCCL's sums, when join() opened it
  std::thread thread_;
};

}  // namespace comm
}  // namespace remat

#endif  // REMAT_COMM_MPI_COMMUNICATOR_H_
