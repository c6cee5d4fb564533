// The CUDA backend's entry points beyond the Backend interface: the factory and the device
// lister the registry calls, and the step-boundary hooks that capture a step as a CUDA graph.
//
// Memory: one cudaMalloc for the arena and one for the persistent region at creation (never
// managed memory). The host region (spill slots) is RegionSetup::host, page-locked in place
// with cudaHostRegister so that copies are asynchronous and the slots hold their bytes in the
// caller's memory, as on every backend; when no buffer is given (or it cannot be locked) the
// backend uses one pinned cudaHostAlloc of host_bytes instead. upload()/download() of
// Region::kHost read and write whichever buffer that is.
//
// Graphs: between Backend::begin_step() and end_step() (which the session calls around every
// step; cuda_begin_step()/cuda_end_step() reach them directly) the first step's ops are captured
// (cudaStreamBeginCapture) instead of run, then the graph is instantiated and launched; later
// steps only count their ops and replay it. Kernels read the seed and step from device
// memory written before each launch, so one graph serves every step. REMAT_CUDA_GRAPHS=0 in the
// environment at creation turns capture off: every op is then launched as it comes, as in every
// step of a data-parallel plan, whose all-reduce ops wait for the host mid-step.
#ifndef REMAT_BACKENDS_CUDA_CUDA_BACKEND_H_
#define REMAT_BACKENDS_CUDA_CUDA_BACKEND_H_

#include "runtime/backend.h"

namespace remat {

/// Creates the CUDA backend on device |device| ("" or "N"). No driver or device:
/// REMAT_ERROR_UNAVAILABLE with the CUDA error name; device memory short:
/// REMAT_ERROR_RESOURCE_EXHAUSTED; cuBLAS missing: REMAT_ERROR_UNAVAILABLE.
remat_status create_cuda_backend(const char* device, const RegionSetup& regions,
                                 Backend** out_backend, ErrorBuffer* err);

/// The CUDA backend's device lister (the registry's DeviceLister), in cuda_devices.cc. Writes
///   cuda:N  DEVICE NAME (sm_XY, M MiB, K multiprocessors)
/// per device, or "(cuda: unavailable: cudaGetDeviceCount failed: NAME (text))" when there is
/// no driver or device. Asks cudart only: cuBLAS stays unloaded. Returns the device count, or -1
/// when |out| is NULL or |capacity| is 0.
int list_cuda_devices(char* out, size_t capacity);

/// Marks the start of a step run with |ctx| on |backend| (a CUDA backend): its begin_step().
remat_status cuda_begin_step(Backend* backend, const StepContext& ctx, ErrorBuffer* err);

/// Marks the end of the step begun by cuda_begin_step(): captures or replays the graph and
/// launches it; sync() then waits and reports data errors. Its end_step().
remat_status cuda_end_step(Backend* backend, ErrorBuffer* err);

/// Number of steps run by replaying the captured graph (tests check that replay happened).
uint64_t cuda_graph_replays(const Backend* backend);

}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUDA_BACKEND_H_
