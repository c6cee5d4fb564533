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

}  // namespace

remat_status remat_mpi_join(double timeout_seconds, remat_mpi** out, char* message,
                            size_t capacity) {
  if (message != nullptr && capacity > 0) message[0] = '\0';
  if (out == nullptr)
    return fail(REMAT_ERROR_INVALID_ARGUMENT, message, capacity, "remat_mpi_join: out is NULL");
  *out = nullptr;
  if (!(timeout_seconds > 0 && timeout_seconds <= kLongestTimeout)) {
    char text[160];
    snprintf(text, sizeof text,
             "remat_mpi_join: timeout_seconds is %g; it must be above 0 and at most %g (a day)",
             timeout_seconds, kLongestTimeout);
    return fail(REMAT_ERROR_INVALID_ARGUMENT, message, capacity, text);
  }
  try {
    std::unique_ptr<remat_mpi> mpi(new remat_mpi());
    mpi->world = remat::comm::MpiWorld::join(timeout_seconds);
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

const remat_communicator* remat_mpi_communicator(const remat_mpi* mpi) {
  return mpi != nullptr ? mpi->world->communicator() : nullptr;
}

void remat_mpi_leave(remat_mpi* mpi) { delete mpi; }  // ~MpiWorld: no exception
