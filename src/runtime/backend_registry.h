// The backends compiled in: creating one by name ("cpu", "opencl:0:1", ...) and listing the
// devices each reaches on this machine.
#ifndef REMAT_RUNTIME_BACKEND_REGISTRY_H_
#define REMAT_RUNTIME_BACKEND_REGISTRY_H_

#include <stddef.h>

#include "runtime/backend.h"

namespace remat {

/// Signature every backend's factory has: |device| is the part after "name:" ("" when none).
/// The backend is placed in memory from port_alloc(); destroy it with destroy_backend().
using BackendFactory = remat_status (*)(const char* device, const RegionSetup& regions,
                                        Backend** out_backend, ErrorBuffer* err);

/// Signature every backend's device lister has (`list_NAME_devices`, beside its factory).
/// Writes one line per device it reaches here into |out| ("NAME:INDEX  description"), or, when
/// it reaches none, one line "(NAME: unavailable: why)"; |out| is NUL-terminated and truncated
/// to |capacity|. Returns the number of devices (0 when none), or -1 when |out| is null or
/// |capacity| is 0. A lister never aborts, never allocates through the port and loads no
/// library that only running needs (the CUDA lister asks cudart, never cuBLAS).
using DeviceLister = int (*)(char* out, size_t capacity);

/// Number of backends compiled into this build ("cpu" is always the first).
size_t backend_count();

/// Name of compiled-in backend |index| ("cpu", "opencl", "cuda"), or nullptr when |index| is
/// backend_count() or more.
const char* backend_name(size_t index);

/// Lists the devices of compiled-in backend |index| into |out| as DeviceLister describes.
/// Returns -1 (and writes nothing) when |index| is out of range.
int list_backend_devices(size_t index, char* out, size_t capacity);

/// Creates the backend that |spec| names. Unknown or not-compiled-in names give
/// REMAT_ERROR_UNAVAILABLE with the list of compiled-in backends in the message.
remat_status create_backend(const char* spec, const RegionSetup& regions, Backend** out_backend,
                            ErrorBuffer* err);

/// Destroys a backend made by create_backend(). nullptr is allowed.
void destroy_backend(Backend* backend);

}  // namespace remat

#endif  // REMAT_RUNTIME_BACKEND_REGISTRY_H_
