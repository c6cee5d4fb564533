/* remat's MPI communicator: data-parallel training (docs/data-parallel.md) for a C caller.
 *
 * libremat_mpi (pkg-config remat-mpi), built where meson finds MPI (-Dmpi), gives the
 * communicator `remat train --data-parallel` uses: the ranks of MPI_COMM_WORLD sum each bucket
 * of gradients with MPI_Allreduce on a thread of its own while the session's step goes on.
 * A program that trains a data-parallel plan (`remat compile --data-parallel`) on each rank:
 *
 *   remat_mpi* mpi = NULL;
 *   remat_mpi_join(30.0, &mpi, message, sizeof message);   // initialises MPI
 *   options.communicator = remat_mpi_communicator(mpi);    // rank and size inside
 *   ... remat_session_create(), the rank's share of each batch, remat_session_step() ...
 *   remat_session_destroy(session);
 *   remat_mpi_leave(mpi);                                   // finalises MPI
 *
 * A rank that does not take part in a sum within the timeout (it failed, was killed or was
 * stopped) ends the whole job: the waiting rank prints a message naming the bucket and exits
 * with status 1 without finalising MPI, which makes mpirun end the others, since the missing
 * rank's sum could still write the session's arena should it come back. */
#ifndef REMAT_REMAT_MPI_H_
#define REMAT_REMAT_MPI_H_

#include "remat/remat.h"

#ifdef __cplusplus
extern "C" {
#endif

/** This process's membership of MPI_COMM_WORLD, with the communicator it gives sessions. */
typedef struct remat_mpi remat_mpi;

/** Initialises MPI (MPI_THREAD_SERIALIZED: every MPI call remat makes runs on the communicator's
 *  thread) and starts that thread; |timeout_seconds| (> 0, at most a day) is how long a wait for
 *  another rank's part of a sum waits before it ends the job. One per process, left with
 *  remat_mpi_leave(); MPI cannot be initialised again after that. Returns
 *  REMAT_ERROR_INVALID_ARGUMENT for a NULL |out| or a timeout out of range,
 *  REMAT_ERROR_FAILED_PRECONDITION when MPI was initialised or finalised already (by this library
 *  or the caller), REMAT_ERROR_UNAVAILABLE when MPI gives less than MPI_THREAD_SERIALIZED or
 *  reports a failed start (MPI's default error handler may instead end the process, as Open
 *  MPI's does), REMAT_ERROR_RESOURCE_EXHAUSTED without memory or a thread for it (MPI then left
 *  finalised); each writes why into |message| (|capacity| bytes, may be NULL / 0). */
REMAT_API remat_status remat_mpi_join(double timeout_seconds, remat_mpi** out, char* message,
                                      size_t capacity);

/** The communicator for remat_session_options.communicator (its rank and size are this
 *  process's and MPI_COMM_WORLD's); valid until remat_mpi_leave(). NULL for a NULL |mpi|. Its
 *  allreduce_start refuses more than 8 arrays (REMAT_ERROR_INVALID_ARGUMENT) and its
 *  allreduce_wait a bucket never started (REMAT_ERROR_FAILED_PRECONDITION). */
REMAT_API const remat_communicator* remat_mpi_communicator(const remat_mpi* mpi);

/** Stops the communicator's thread and finalises MPI, on the thread that joined (MPI asks
 *  MPI_Finalize of the thread that initialised it). Call it once, after destroying every session
 *  that uses the communicator: a session's next step would call freed memory. NULL is a no-op. */
REMAT_API void remat_mpi_leave(remat_mpi* mpi);

#ifdef __cplusplus
}
#endif

#endif /* REMAT_REMAT_MPI_H_ */
