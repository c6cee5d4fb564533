// NCCL's side of the communicator (comm/nccl_communicator.h).
#include "comm/nccl_communicator.h"

#include <stdio.h>

#include <chrono>
#include <new>
#include <string>
#include <thread>

#ifdef REMAT_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#endif

namespace remat {
namespace comm {

#ifdef REMAT_HAVE_NCCL

static_assert(sizeof(NcclId) == sizeof(ncclUniqueId), "NcclId holds an ncclUniqueId");

struct NcclLibrary {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRankConfig) comm_init_rank_config;
  decltype(&ncclCommFinalize) comm_finalize;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclCommGetAsyncError) comm_get_async_error;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclGetErrorString) error_string;
};

namespace {

using Clock = std::chrono::steady_clock;

#define REMAT_STR2(x) #x
#define REMAT_STR(x) REMAT_STR2(x)
// The major version the header was compiled against: its ABI is the one the prototypes use.
constexpr const char* kSoname = "libnccl.so." REMAT_STR(NCCL_MAJOR);

std::string cuda_error(const char* call, cudaError_t e) {
  cudaGetLastError();  // not sticky: the next call starts clean
  return std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

// libnccl.so.2 as the loader finds it, else the one beside libcudart (where a CUDA toolkit that
// ships NCCL keeps it, a folder not always on the loader's path).
void* load_library(std::string* why) {
  void* library = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr) return library;
  *why = dlerror();
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) != 0 &&
      info.dli_fname != nullptr) {
    std::string path = info.dli_fname;
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos) {
      path = path.substr(0, slash + 1) + kSoname;
      library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
  }
  return library;
}

template <typename F>
void resolve(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  if (*out == nullptr) {
    throw std::runtime_error(std::string("NCCL (") + kSoname + ") has no symbol " + name +
                             " (remat needs NCCL 2.14 or later)");
  }
}

NcclLibrary load_nccl() {
  std::string why;
  void* library = load_library(&why);
  if (library == nullptr) {
    throw std::runtime_error(std::string("cannot load NCCL (") + kSoname + "): " + why +
                             " (install NCCL, or put its folder on LD_LIBRARY_PATH)");
  }
  NcclLibrary l{};
  resolve(library, "ncclGetUniqueId", &l.get_unique_id);
  resolve(library, "ncclCommInitRankConfig", &l.comm_init_rank_config);
  resolve(library, "ncclCommFinalize", &l.comm_finalize);
  resolve(library, "ncclCommDestroy", &l.comm_destroy);
  resolve(library, "ncclCommAbort", &l.comm_abort);
  resolve(library, "ncclCommGetAsyncError", &l.comm_get_async_error);
  resolve(library, "ncclAllReduce", &l.all_reduce);
  resolve(library, "ncclGroupStart", &l.group_start);
  resolve(library, "ncclGroupEnd", &l.group_end);
  resolve(library, "ncclGetErrorString", &l.error_string);
  return l;  // the library stays loaded: NCCL holds process-wide state
}

// Loaded at the first call that succeeds (a throw leaves it for the next call to try again).
const NcclLibrary& nccl_library() {
  static const NcclLibrary library = load_nccl();
  return library;
}

Clock::time_point after(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The communicator is non-blocking (its start and group calls may return ncclInProgress and go
// on in NCCL's threads), so that no call waits for another rank without a timeout: polls its
// state until that work ends, with its result, or until |deadline| (ncclInProgress then).
ncclResult_t settle(const NcclLibrary& nccl, ncclComm_t comm, Clock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = nccl.comm_get_async_error(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress || Clock::now() > deadline) return state;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

bool nccl_built() { return true; }

int NcclCommunicator::device_of_local_rank(int local_rank) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count <= 0) {
    cudaGetLastError();
    return local_rank;
  }
  return local_rank % count;
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::open(int device, double timeout_seconds) {
  const NcclLibrary& nccl = nccl_library();
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess)
    throw std::runtime_error("no CUDA device: " + cuda_error("cudaGetDeviceCount", counted));
  if (device < 0 || device >= count) {
    throw std::runtime_error("no CUDA device " + std::to_string(device) + " (" +
                             std::to_string(count) + " present)");
  }
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->nccl_ = &nccl;
  c->timeout_seconds_ = timeout_seconds;
  c->communicator_.struct_size = sizeof(remat_communicator);
  c->communicator_.memory = REMAT_MEMORY_CUDA;
  c->communicator_.device = device;
  c->communicator_.user = c.get();
  c->communicator_.allreduce_start = start;
  c->communicator_.allreduce_wait = wait;
  // The device stays current, as the cuda backend leaves its own: restoring an earlier one
  // (device 0 when none was set) would make a context there.
  const cudaError_t set = cudaSetDevice(device);
  if (set != cudaSuccess) {
    throw std::runtime_error("CUDA device " + std::to_string(device) + ": " +
                             cuda_error("cudaSetDevice", set));
  }
  cudaStream_t stream = nullptr;
  const cudaError_t made = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (made != cudaSuccess) throw std::runtime_error(cuda_error("cudaStreamCreateWithFlags", made));
  c->stream_ = stream;
  return c;
}

NcclId NcclCommunicator::new_id() const {
  NcclId id{};
  ncclUniqueId unique{};
  const ncclResult_t r = nccl_->get_unique_id(&unique);
  if (r != ncclSuccess)
    throw std::runtime_error(std::string("ncclGetUniqueId failed: ") + nccl_->error_string(r));
  for (size_t i = 0; i < sizeof(id.bytes); ++i) id.bytes[i] = unique.internal[i];
  return id;
}

void NcclCommunicator::connect(const NcclId& id, int rank, int size) {
  ncclUniqueId unique{};
  for (size_t i = 0; i < sizeof(id.bytes); ++i) unique.internal[i] = id.bytes[i];
  const std::string who = "rank " + std::to_string(rank) + " of " + std::to_string(size);
  const cudaError_t set = cudaSetDevice(communicator_.device);
  if (set != cudaSuccess) throw std::runtime_error(who + ": " + cuda_error("cudaSetDevice", set));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = nccl_->comm_init_rank_config(&comm, size, unique, rank, &config);
  if ((r == ncclSuccess || r == ncclInProgress) && comm != nullptr)
    r = settle(*nccl_, comm, after(timeout_seconds_));
  if (r == ncclSuccess) {
    comm_ = comm;
    communicator_.rank = rank;
    communicator_.size = size;
    return;
  }
  if (comm != nullptr) nccl_->comm_abort(comm);
  if (r == ncclInProgress) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", timeout_seconds_);
    throw std::runtime_error(who + ": NCCL's start did not end within " + text +
                             " s: a rank failed, was killed or stopped");
  }
  throw std::runtime_error(who + ": ncclCommInitRankConfig failed: " + nccl_->error_string(r));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ != nullptr) {
    ncclComm_t comm = static_cast<ncclComm_t>(comm_);
    cudaSetDevice(communicator_.device);
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    // Finalising flushes NCCL's work; one that does not end in time is aborted instead.
    ncclResult_t r = nccl_->comm_finalize(comm);
    if (r == ncclSuccess || r == ncclInProgress) r = settle(*nccl_, comm, after(timeout_seconds_));
    if (r == ncclSuccess) {
      nccl_->comm_destroy(comm);
    } else {
      nccl_->comm_abort(comm);
    }
  }
  for (Bucket& b : buckets_) cudaEventDestroy(static_cast<cudaEvent_t>(b.done));
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

remat_status NcclCommunicator::give_up(const char* what) {
  std::fprintf(stderr, "remat: rank %d of %d: %s; the NCCL communicator is aborted\n",
               communicator_.rank, communicator_.size, what);
  if (!failed_ && comm_ != nullptr) nccl_->comm_abort(static_cast<ncclComm_t>(comm_));
  failed_ = true;
  comm_ = nullptr;  // aborting freed it
  return REMAT_ERROR_UNAVAILABLE;
}

remat_status NcclCommunicator::start(void* user, uint32_t bucket, const remat_buffer* parts,
                                     uint32_t count) noexcept {
  NcclCommunicator* c = static_cast<NcclCommunicator*>(user);
  if (count > 8 || (count > 0 && parts == nullptr)) return REMAT_ERROR_INVALID_ARGUMENT;
  if (c->failed_ || c->comm_ == nullptr) return REMAT_ERROR_FAILED_PRECONDITION;
  const cudaError_t set = cudaSetDevice(c->communicator_.device);
  if (set != cudaSuccess) return c->give_up(cuda_error("cudaSetDevice", set).c_str());
  // A bucket's event is made at its first start (the first step), never again.
  try {
    while (c->buckets_.size() <= bucket) {
      cudaEvent_t event = nullptr;
      const cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      if (e != cudaSuccess) return c->give_up(cuda_error("cudaEventCreateWithFlags", e).c_str());
      c->buckets_.push_back(Bucket{event, false});
    }
  } catch (const std::bad_alloc&) {
    return REMAT_ERROR_RESOURCE_EXHAUSTED;
  }
  Bucket& b = c->buckets_[bucket];
  if (b.in_flight) return REMAT_ERROR_FAILED_PRECONDITION;  // started twice without a wait
  const NcclLibrary& nccl = *c->nccl_;
  ncclComm_t comm = static_cast<ncclComm_t>(c->comm_);
  cudaStream_t stream = static_cast<cudaStream_t>(c->stream_);
  ncclResult_t r = nccl.group_start();
  for (uint32_t i = 0; i < count && r == ncclSuccess; ++i) {
    r = nccl.all_reduce(parts[i].data, parts[i].data, static_cast<size_t>(parts[i].count),
                        ncclFloat32, ncclSum, comm, stream);
  }
  ncclResult_t ended = nccl.group_end();
  // The sums are on the stream once the group's work ends.
  if (ended == ncclInProgress) ended = settle(nccl, comm, after(c->timeout_seconds_));
  if (r == ncclSuccess) r = ended;
  if (r != ncclSuccess) {
    return c->give_up((std::string("ncclAllReduce of bucket ") + std::to_string(bucket) +
                       (r == ncclInProgress ? std::string(" was not queued in time")
                                            : std::string(" failed: ") + nccl.error_string(r)))
                          .c_str());
  }
  const cudaError_t e = cudaEventRecord(static_cast<cudaEvent_t>(b.done), stream);
  if (e != cudaSuccess) return c->give_up(cuda_error("cudaEventRecord", e).c_str());
  b.in_flight = true;
  return REMAT_OK;
}

remat_status NcclCommunicator::wait(void* user, uint32_t bucket) noexcept {
  NcclCommunicator* c = static_cast<NcclCommunicator*>(user);
  if (bucket >= c->buckets_.size() || !c->buckets_[bucket].in_flight)
    return REMAT_ERROR_FAILED_PRECONDITION;  // never started, or waited for already
  Bucket& b = c->buckets_[bucket];
  b.in_flight = false;
  if (c->failed_) return REMAT_ERROR_UNAVAILABLE;  // aborted: no sum writes the arrays now
  // Polled rather than synchronised, so that a rank that never sends its part (it failed, was
  // killed or stopped) ends the wait after the timeout instead of hanging it.
  const Clock::time_point deadline = after(c->timeout_seconds_);
  for (uint64_t polls = 0;; ++polls) {
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(b.done));
    if (e == cudaSuccess) return REMAT_OK;
    if (e != cudaErrorNotReady) return c->give_up(cuda_error("cudaEventQuery", e).c_str());
    ncclResult_t async = ncclSuccess;
    c->nccl_->comm_get_async_error(static_cast<ncclComm_t>(c->comm_), &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      return c->give_up((std::string("the sum of bucket ") + std::to_string(bucket) +
                         " failed: " + c->nccl_->error_string(async))
                            .c_str());
    }
    if (Clock::now() > deadline) {
      char what[160];
      std::snprintf(what, sizeof what,
                    "no sum of bucket %u within %g s (--rank-timeout): a rank failed, was "
                    "killed or stopped",
                    static_cast<unsigned>(bucket), c->timeout_seconds_);
      return c->give_up(what);
    }
    // Spin briefly (a sum is often about to end), then yield the core to the kernels' threads.
    if (polls < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

#else

bool nccl_built() { return false; }

int NcclCommunicator::device_of_local_rank(int local_rank) { return local_rank; }

std::unique_ptr<NcclCommunicator> NcclCommunicator::open(int, double) {
  throw std::runtime_error(
      "this remat was built without NCCL: its communicator needs CUDA (-Dcuda=enabled) and "
      "NCCL's header, 2.14 or later, at build time (libnccl-dev)");
}

NcclId NcclCommunicator::new_id() const { return NcclId{}; }

void NcclCommunicator::connect(const NcclId&, int, int) {}

NcclCommunicator::~NcclCommunicator() = default;

remat_status NcclCommunicator::give_up(const char*) { return REMAT_ERROR_UNAVAILABLE; }

remat_status NcclCommunicator::start(void*, uint32_t, const remat_buffer*, uint32_t) noexcept {
  return REMAT_ERROR_UNAVAILABLE;
}

remat_status NcclCommunicator::wait(void*, uint32_t) noexcept { return REMAT_ERROR_UNAVAILABLE; }

#endif

}  // namespace comm
}  // namespace remat
