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
 * rank's sum could still write the session's arena should it come back. On CUDA devices,
 * remat_mpi_join_nccl() sums with NCCL in device memory instead (its timeouts differ: below). */
#ifndef REMAT_REMAT_MPI_H_
#define REMAT_REMAT_MPI_H_

#include "remat/remat.h"

#ifdef __cplusplus
extern "C" {
#endif

/** This process's membership of MPI_COMM_WORLD, with the communicator it gives sessions. */
typedef struct remat_mpi remat_mpi;

/** Initialises MPI (MPI_THREAD_SERIALIZED: every MPI call remat makes once joined runs on the
 *  communicator's thread) and starts that thread; |timeout_seconds| (> 0, at most a day) is
 *  how long a wait for another rank's part of a sum waits before it ends the job. One per
 *  process, left with remat_mpi_leave(); MPI cannot be initialised again after that. Returns
 *  REMAT_ERROR_INVALID_ARGUMENT for a NULL |out| or a timeout out of range,
 *  REMAT_ERROR_FAILED_PRECONDITION when MPI was initialised or finalised already (by this library
 *  or the caller), REMAT_ERROR_UNAVAILABLE when MPI gives less than MPI_THREAD_SERIALIZED or
 *  reports a failed start (MPI's default error handler may instead end the process, as Open
 *  MPI's does), REMAT_ERROR_RESOURCE_EXHAUSTED without memory or a thread for it (MPI then left
 *  finalised); each writes why into |message| (|capacity| bytes, may be NULL / 0). */
REMAT_API remat_status remat_mpi_join(double timeout_seconds, remat_mpi** out, char* message,
                                      size_t capacity);

/** As remat_mpi_join(), then sums the buckets with NCCL in CUDA device memory instead of MPI's
 *  host copies: the communicator is then of REMAT_MEMORY_CUDA on device |cuda_device| (-1: the
 *  device of the rank's local rank, its rank among the ranks on its machine, modulo the devices
 *  it sees: one GPU per rank), for a session whose backend is "cuda:D", D its
 *  remat_communicator.device, which becomes the joining thread's current CUDA device. NCCL
 *  (libnccl.so.2, 2.14 or later) is loaded with dlopen. Each rank opens NCCL on its device, the
 *  ranks agree that every one could, then start a non-blocking NCCL communicator together,
 *  given up after the timeout. A wait for a bucket's sums that fails or exceeds the timeout
 *  prints why, aborts NCCL's communicator (so no sum writes the arena after it) and fails the
 *  step (REMAT_ERROR_CALLBACK) instead of ending the job: the caller ends it. Returns what
 * remat_mpi_join() does, and REMAT_ERROR_INVALID_ARGUMENT for a |cuda_device| below -1 or above
 * 1023, REMAT_ERROR_UNAVAILABLE when a rank cannot open NCCL (a build without CUDA or NCCL's
 * header, no NCCL, no such device) or NCCL's start fails or times out, MPI left finalised. */
REMAT_API remat_status remat_mpi_join_nccl(double timeout_seconds, int32_t cuda_device,
                                           remat_mpi** out, char* message, size_t capacity);

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
