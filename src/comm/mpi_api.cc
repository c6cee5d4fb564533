// The C API of MPI's communicator (include/remat/remat_mpi.h) over comm::MpiWorld.
#include "remat/remat_mpi.h"

#include <stdio.h>

#include <memory>
#include <new>
#include <stdexcept>
#include <system_error>

#include "comm/mpi_communicator.h"

struct remat_mpi {
  std::unique_ptr<remat::comm::MpiWorld> world;
};

namespace {

// A day: longer than any bucket's sum, short enough for a timer's double.
constexpr double kLongestTimeout = 86400;

remat_status fail(remat_status status, char* message, size_t capacity, const char* what) {
  if (message != nullptr && capacity > 0) snprintf(message, capacity, "%s", what);
  return status;
}

// remat_mpi_join() (|function|) with |nccl_device|: MpiWorld::join()'s.
remat_status join(const char* function, double timeout_seconds, int nccl_device, remat_mpi** out,
                  char* message, size_t capacity) {
  if (message != nullptr && capacity > 0) message[0] = '\0';
  char text[160];
  if (out == nullptr) {
    snprintf(text, sizeof text, "%s: out is NULL", function);
    return fail(REMAT_ERROR_INVALID_ARGUMENT, message, capacity, text);
  }
  *out = nullptr;
  if (!(timeout_seconds > 0 && timeout_seconds <= kLongestTimeout)) {
    snprintf(text, sizeof text,
             "%s: timeout_seconds is %g; it must be above 0 and at most %g (a day)", function,
             timeout_seconds, kLongestTimeout);
    return fail(REMAT_ERROR_INVALID_ARGUMENT, message, capacity, text);
  }
  try {
    std::unique_ptr<remat_mpi> mpi(new remat_mpi());
    mpi->world = remat::comm::MpiWorld::join(timeout_seconds, nccl_device);
    *out = mpi.release();
    return REMAT_OK;
  } catch (const remat::comm::MpiStartedAlready& e) {
    return fail(REMAT_ERROR_FAILED_PRECONDITION, message, capacity, e.what());
  } catch (const std::bad_alloc&) {
    return fail(REMAT_ERROR_RESOURCE_EXHAUSTED, message, capacity, "remat_mpi_join: no memory");
  } catch (const std::system_error& e) {
    return fail(REMAT_ERROR_RESOURCE_EXHAUSTED, message, capacity, e.what());  // no thread
  } catch (const std::exception& e) {
    return fail(REMAT_ERROR_UNAVAILABLE, message, capacity, e.what());
  }
}

}  // namespace

remat_status remat_mpi_join(double timeout_seconds, remat_mpi** out, char* message,
                            size_t capacity) {
  return join("remat_mpi_join", timeout_seconds, remat::comm::MpiWorld::kNoNccl, out, message,
              capacity);
}

remat_status remat_mpi_join_nccl(double timeout_seconds, int32_t cuda_device, remat_mpi** out,
                                 char* message, size_t capacity) {
  if (cuda_device < -1 || cuda_device > 1023) {
    if (message != nullptr && capacity > 0) {
      snprintf(message, capacity,
               "remat_mpi_join_nccl: cuda_device is %d; a device is -1 (the local rank) to 1023",
               static_cast<int>(cuda_device));
    }
    if (out != nullptr) *out = nullptr;
    return REMAT_ERROR_INVALID_ARGUMENT;
  }
  return join("remat_mpi_join_nccl", timeout_seconds, cuda_device, out, message, capacity);
}

const remat_communicator* remat_mpi_communicator(const remat_mpi* mpi) {
  return mpi != nullptr ? mpi->world->communicator() : nullptr;
}

void remat_mpi_leave(remat_mpi* mpi) { delete mpi; }  // ~MpiWorld: no exception
