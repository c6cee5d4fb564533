// Creating a backend by name ("cpu", "opencl:0:1", ...) from the backends compiled in.
#ifndef REMAT_RUNTIME_BACKEND_REGISTRY_H_
#define REMAT_RUNTIME_BACKEND_REGISTRY_H_

#include "runtime/backend.h"

namespace remat {

/// Signature every backend's factory has: |device| is the part after "name:" ("" when none).
/// The backend is placed in memory from port_alloc(); destroy it with destroy_backend().
using BackendFactory = remat_status (*)(const char* device, const RegionSetup& regions,
                                        Backend** out_backend, ErrorBuffer* err);

/// Creates the backend that |spec| names. Unknown or not-compiled-in names give
/// REMAT_ERROR_UNAVAILABLE with the list of compiled-in backends in the message.
remat_status create_backend(const char* spec, const RegionSetup& regions, Backend** out_backend,
                            ErrorBuffer* err);

/// Destroys a backend made by create_backend(). nullptr is allowed.
void destroy_backend(Backend* backend);

}  // namespace remat

#endif  // REMAT_RUNTIME_BACKEND_REGISTRY_H_
