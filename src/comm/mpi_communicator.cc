// MPI's side of the communicator (comm/mpi_communicator.h).
#include "comm/mpi_communicator.h"

#include <limits.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#ifdef REMAT_HAVE_MPI
#include <mpi.h>
#endif

namespace remat {
namespace comm {

#ifdef REMAT_HAVE_MPI

bool mpi_available() { return true; }

std::unique_ptr<MpiWorld> MpiWorld::join(double timeout_seconds, int nccl_device) {
  // The sums' thread shares the cores with the kernels' threads: Open MPI's polling for a peer
  // yields the core rather than spinning on it (unless the caller set it otherwise).
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized || finalized) {
    throw MpiStartedAlready(finalized ? "MPI was finalised already: it cannot start again"
                                      : "MPI was initialised already: join initialises it");
  }
  // Made before MPI starts, so that nothing after MPI_Init_thread but the thread can fail; from
  // then on the destructor finalises MPI, whatever throws.
  std::unique_ptr<MpiWorld> world(new MpiWorld());
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    throw std::runtime_error("MPI_Init_thread failed");
  world->mpi_initialised_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    throw std::runtime_error(
        "this MPI library gives no MPI_THREAD_SERIALIZED: the sums run on a thread of their own");
  }
  world->communicator_.struct_size = sizeof(remat_communicator);
  MPI_Comm_rank(MPI_COMM_WORLD, &world->communicator_.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world->communicator_.size);
  world->communicator_.user = world.get();
  world->communicator_.allreduce_start = start;
  world->communicator_.allreduce_wait = wait;
  world->timeout_seconds_ = timeout_seconds;
  MPI_Comm machine = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &machine) !=
      MPI_SUCCESS)
    throw std::runtime_error("MPI_Comm_split_type failed: no local rank");
  MPI_Comm_rank(machine, &world->local_rank_);
  MPI_Comm_free(&machine);
  // Before the thread starts: until then this thread alone calls MPI.
  if (nccl_device != kNoNccl) {
    world->join_nccl(nccl_device == kLocalRankDevice
                         ? NcclCommunicator::device_of_local_rank(world->local_rank_)
                         : nccl_device);
  }
  world->thread_ = std::thread([w = world.get()] { w->run(); });
  return world;
}

void MpiWorld::join_nccl(int device) {
  // Each rank opens NCCL by itself first, and all agree that every one could, so that no rank
  // waits in NCCL's collective start (which has no timeout) for one that never comes.
  std::string failure;
  try {
    nccl_ = NcclCommunicator::open(device, timeout_seconds_);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  NcclId id{};
  if (nccl_ && rank() == 0) {
    try {
      id = nccl_->new_id();
    } catch (const std::exception& e) {
      failure = e.what();
      nccl_.reset();
    }
  }
  int opened = nccl_ ? 1 : 0;
  if (MPI_Allreduce(MPI_IN_PLACE, &opened, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw std::runtime_error("MPI_Allreduce failed while the ranks opened NCCL");
  if (opened == 0) {
    nccl_.reset();
    throw NcclUnavailable(
        "rank " + std::to_string(rank()) + ": NCCL on CUDA device " + std::to_string(device) +
        ": " +
        (failure.empty() ? "another rank could not open NCCL (its message says why)" : failure));
  }
  if (MPI_Bcast(id.bytes, static_cast<int>(sizeof id.bytes), MPI_BYTE, 0, MPI_COMM_WORLD) !=
      MPI_SUCCESS)
    throw std::runtime_error("MPI_Bcast of NCCL's id failed");
  try {
    nccl_->connect(id, rank(), size());
  } catch (const std::runtime_error& e) {
    throw NcclUnavailable(e.what());
  }
}

MpiWorld::~MpiWorld() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  nccl_.reset();  // its sums end before MPI does
  if (mpi_initialised_) MPI_Finalize();
}

void MpiWorld::abort_all(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  // Not MPI_Abort: another thread may be inside MPI, and under the sanitizers MPI_Abort crashed
  // or hung with a stopped rank. A rank that exits unfinalised makes mpirun end the others.
  std::_Exit(code);
}

uint64_t MpiWorld::queue(const Job& job) {
  uint64_t number;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // What may allocate comes first, so that a job is queued only when it is recorded too (a
    // sum queued but not recorded would write the arena with no wait for it).
    uint64_t* last_sum = job.kind == Job::kSum ? &last_sum_[job.bucket] : nullptr;
    if (pending_ == ring_.size()) {
      std::vector<Job> grown(ring_.empty() ? 16 : 2 * ring_.size());
      for (size_t i = 0; i < pending_; ++i) grown[i] = ring_[(head_ + i) % ring_.size()];
      ring_.swap(grown);
      head_ = 0;
    }
    ring_[(head_ + pending_) % ring_.size()] = job;
    ++pending_;
    number = ++queued_;
    if (last_sum != nullptr) *last_sum = number;
  }
  changed_.notify_all();
  return number;
}

void MpiWorld::wait_for(uint64_t number, const char* agreement_on, uint32_t bucket) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (changed_.wait_for(lock, std::chrono::duration<double>(timeout_seconds_),
                        [&] { return done_ >= number; }))
    return;
  // A sum may still write the session's arena should the missing rank come back: the job ends
  // here, before anything is freed.
  char bucket_text[16];
  std::snprintf(bucket_text, sizeof bucket_text, "%u", static_cast<unsigned>(bucket));
  std::fprintf(stderr,
               "remat: rank %d of %d: no %s%s within %g s (--rank-timeout): a rank failed, was "
               "killed or stopped; ending the job\n",
               communicator_.rank, communicator_.size,
               agreement_on != nullptr ? "agreement on " : "sum of bucket ",
               agreement_on != nullptr ? agreement_on : bucket_text, timeout_seconds_);
  abort_all(1);
}

uint64_t MpiWorld::agree(unsigned long long value, Job::Kind kind, const char* what) {
  Job job{};
  job.kind = kind;
  job.value = &value;
  wait_for(queue(job), what, 0);
  return value;
}

uint64_t MpiWorld::highest_everywhere(uint64_t value, const char* what) {
  return agree(value, Job::kMax, what);
}

bool MpiWorld::same_everywhere(uint64_t value, const char* what) {
  return agree(value, Job::kMin, what) == agree(value, Job::kMax, what);
}

remat_status MpiWorld::start(void* user, uint32_t bucket, const remat_buffer* parts,
                             uint32_t count) noexcept {
  MpiWorld* w = static_cast<MpiWorld*>(user);
  if (count > kMaxParts || (count > 0 && parts == nullptr)) return REMAT_ERROR_INVALID_ARGUMENT;
  try {
    Job job{};
    job.kind = Job::kSum;
    job.bucket = bucket;
    job.count = count;
    for (uint32_t i = 0; i < count; ++i) job.parts[i] = parts[i];
    w->queue(job);
    return REMAT_OK;
  } catch (const std::exception&) {
    // No memory for the job (or no lock): nothing was queued; the step stops with
    // REMAT_ERROR_CALLBACK.
    return REMAT_ERROR_RESOURCE_EXHAUSTED;
  }
}

remat_status MpiWorld::wait(void* user, uint32_t bucket) noexcept {
  MpiWorld* w = static_cast<MpiWorld*>(user);
  try {
    uint64_t number = 0;
    {
      std::lock_guard<std::mutex> lock(w->mutex_);
      const auto found = w->last_sum_.find(bucket);
      if (found == w->last_sum_.end()) return REMAT_ERROR_FAILED_PRECONDITION;  // never started
      number = found->second;
    }
    w->wait_for(number, nullptr, bucket);
    return REMAT_OK;
  } catch (const std::exception&) {
    return REMAT_ERROR_INTERNAL;  // a lock that failed: the sum's state is unknown
  }
}

void MpiWorld::run() {
  for (;;) {
    Job job{};
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || pending_ > 0; });
      if (pending_ == 0) return;  // stopping, nothing left
      job = ring_[head_];
      head_ = (head_ + 1) % ring_.size();
      --pending_;
    }
    bool failed = false;
    if (job.kind != Job::kSum) {
      failed =
          MPI_Allreduce(MPI_IN_PLACE, job.value, 1, MPI_UNSIGNED_LONG_LONG,
                        job.kind == Job::kMin ? MPI_MIN : MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS;
    }
    // In place, in pieces MPI's int count can take.
    for (uint32_t i = 0; i < job.count; ++i) {
      const remat_buffer& part = job.parts[i];
      for (uint64_t done = 0; done < part.count && !failed;) {
        const uint64_t n = part.count - done < INT_MAX ? part.count - done : INT_MAX;
        failed = MPI_Allreduce(MPI_IN_PLACE, part.data + done, static_cast<int>(n), MPI_FLOAT,
                               MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS;
        done += n;
      }
    }
    if (failed) {
      std::fprintf(stderr, "remat: rank %d: MPI_Allreduce of %s failed; ending the job\n",
                   communicator_.rank,
                   job.kind == Job::kSum ? ("bucket " + std::to_string(job.bucket)).c_str()
                                         : "an agreement");
      abort_all(1);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++done_;
    }
    changed_.notify_all();
  }
}

#else

bool mpi_available() { return false; }

std::unique_ptr<MpiWorld> MpiWorld::join(double, int) {
  throw std::runtime_error(
      "this remat was built without MPI: install libopenmpi-dev and configure with -Dmpi=enabled");
}

MpiWorld::~MpiWorld() = default;

void MpiWorld::abort_all(int code) { std::_Exit(code); }

bool MpiWorld::same_everywhere(uint64_t, const char*) { return true; }

uint64_t MpiWorld::highest_everywhere(uint64_t value, const char*) { return value; }

remat_status MpiWorld::start(void*, uint32_t, const remat_buffer*, uint32_t) noexcept {
  return REMAT_ERROR_UNAVAILABLE;
}

remat_status MpiWorld::wait(void*, uint32_t) noexcept { return REMAT_ERROR_UNAVAILABLE; }

void MpiWorld::run() {}

#endif

}  // namespace comm
}  // namespace remat
