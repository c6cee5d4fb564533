// OpenCL platforms and devices: listing them, choosing one from "PLATFORM:DEVICE", naming errors.
#ifndef REMAT_BACKENDS_OPENCL_OPENCL_DEVICE_H_
#define REMAT_BACKENDS_OPENCL_OPENCL_DEVICE_H_

#include <stddef.h>

#include <CL/cl.h>

#include "runtime/backend.h"

namespace remat {
namespace opencl {

/// The symbolic name of an OpenCL (or CLBlast) status, e.g. "CL_OUT_OF_RESOURCES".
const char* cl_error_name(cl_int status);

/// Whether |status| says the device or host ran out of memory or resources.
inline bool is_exhaustion(cl_int status) {
  return status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
         status == CL_OUT_OF_HOST_MEMORY;
}

/// Formats "what failed: CL_NAME (code)" into |err| and maps |status| to a remat_status:
/// allocation failures give REMAT_ERROR_RESOURCE_EXHAUSTED, anything else |otherwise|.
remat_status cl_fail(ErrorBuffer* err, cl_int status, remat_status otherwise, const char* what);

/// A chosen device and where it came from.
struct DeviceChoice {
  cl_platform_id platform;
  cl_device_id device;
  unsigned platform_index;
  unsigned device_index;
};

/// Chooses the device |spec| names: "" = the first GPU of any platform, else the first device
/// of the first platform that has one; "P" = first device of platform P; "P:D" = device D of
/// platform P (indices as `remat devices` lists them). No platform or no such device gives
/// REMAT_ERROR_UNAVAILABLE; text that is not "", "P" or "P:D" gives REMAT_ERROR_INVALID_ARGUMENT.
remat_status choose_device(const char* spec, DeviceChoice* out_choice, ErrorBuffer* err);

}  // namespace opencl

/// The OpenCL backend's device lister (the registry's DeviceLister). Writes one line per device:
///   opencl:P:D  PLATFORM NAME / DEVICE NAME (TYPE, OpenCL C VERSION, N MiB, M compute units)
/// and "(opencl: unavailable: why)" when there is no platform or device. Returns the number of
/// devices found, or -1 when |out| is NULL or |capacity| is 0. Never aborts, never allocates.
int list_opencl_devices(char* out, size_t capacity);

}  // namespace remat

#endif  // REMAT_BACKENDS_OPENCL_OPENCL_DEVICE_H_
