// OpenCL platform and device discovery, the "P:D" device syntax, and CL error names.
#include "backends/opencl/opencl_device.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace remat {
namespace opencl {
namespace {

// Enough for every machine we know of; more are ignored (and not listed).
constexpr cl_uint kMaxPlatforms = 16;
constexpr cl_uint kMaxDevices = 32;

// clGetPlatformIDs with no ICD installed returns CL_PLATFORM_NOT_FOUND_KHR (-1001): no platform.
constexpr cl_int kPlatformNotFoundKhr = -1001;

cl_uint platform_ids(cl_platform_id* out) {
  cl_uint count = 0;
  if (clGetPlatformIDs(kMaxPlatforms, out, &count) != CL_SUCCESS) return 0;
  return count < kMaxPlatforms ? count : kMaxPlatforms;
}

cl_uint device_ids(cl_platform_id platform, cl_device_type type, cl_device_id* out) {
  cl_uint count = 0;
  if (clGetDeviceIDs(platform, type, kMaxDevices, out, &count) != CL_SUCCESS) return 0;
  return count < kMaxDevices ? count : kMaxDevices;
}

// Parses a decimal index; returns false for empty text or anything but digits.
bool parse_index(const char* begin, const char* end, unsigned* out) {
  if (begin == end || end - begin > 6) return false;
  unsigned value = 0;
  for (const char* p = begin; p < end; ++p) {
    if (*p < '0' || *p > '9') return false;
    value = value * 10 + static_cast<unsigned>(*p - '0');
  }
  *out = value;
  return true;
}

// Appends printf-style text to |out| at |*used|, never past |capacity| (always terminated).
void append(char* out, size_t capacity, size_t* used, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
void append(char* out, size_t capacity, size_t* used, const char* format, ...) {
  if (*used + 1 >= capacity) return;
  va_list args;
  va_start(args, format);
  const int n = vsnprintf(out + *used, capacity - *used, format, args);
  va_end(args);
  if (n > 0)
    *used =
        *used + static_cast<size_t>(n) < capacity ? *used + static_cast<size_t>(n) : capacity - 1;
}

const char* type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  return "other";
}

}  // namespace

const char* cl_error_name(cl_int status) {
  switch (status) {
#define REMAT_CL_NAME(x) \
  case x: return #x;
    REMAT_CL_NAME(CL_SUCCESS)
    REMAT_CL_NAME(CL_DEVICE_NOT_FOUND)
    REMAT_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
    REMAT_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
    REMAT_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    REMAT_CL_NAME(CL_OUT_OF_RESOURCES)
    REMAT_CL_NAME(CL_OUT_OF_HOST_MEMORY)
    REMAT_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
    REMAT_CL_NAME(CL_MEM_COPY_OVERLAP)
    REMAT_CL_NAME(CL_IMAGE_FORMAT_MISMATCH)
    REMAT_CL_NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    REMAT_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
    REMAT_CL_NAME(CL_MAP_FAILURE)
    REMAT_CL_NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    REMAT_CL_NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    REMAT_CL_NAME(CL_COMPILE_PROGRAM_FAILURE)
    REMAT_CL_NAME(CL_LINKER_NOT_AVAILABLE)
    REMAT_CL_NAME(CL_LINK_PROGRAM_FAILURE)
    REMAT_CL_NAME(CL_DEVICE_PARTITION_FAILED)
    REMAT_CL_NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    REMAT_CL_NAME(CL_INVALID_VALUE)
    REMAT_CL_NAME(CL_INVALID_DEVICE_TYPE)
    REMAT_CL_NAME(CL_INVALID_PLATFORM)
    REMAT_CL_NAME(CL_INVALID_DEVICE)
    REMAT_CL_NAME(CL_INVALID_CONTEXT)
    REMAT_CL_NAME(CL_INVALID_QUEUE_PROPERTIES)
    REMAT_CL_NAME(CL_INVALID_COMMAND_QUEUE)
    REMAT_CL_NAME(CL_INVALID_HOST_PTR)
    REMAT_CL_NAME(CL_INVALID_MEM_OBJECT)
    REMAT_CL_NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    REMAT_CL_NAME(CL_INVALID_IMAGE_SIZE)
    REMAT_CL_NAME(CL_INVALID_SAMPLER)
    REMAT_CL_NAME(CL_INVALID_BINARY)
    REMAT_CL_NAME(CL_INVALID_BUILD_OPTIONS)
    REMAT_CL_NAME(CL_INVALID_PROGRAM)
    REMAT_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
    REMAT_CL_NAME(CL_INVALID_KERNEL_NAME)
    REMAT_CL_NAME(CL_INVALID_KERNEL_DEFINITION)
    REMAT_CL_NAME(CL_INVALID_KERNEL)
    REMAT_CL_NAME(CL_INVALID_ARG_INDEX)
    REMAT_CL_NAME(CL_INVALID_ARG_VALUE)
    REMAT_CL_NAME(CL_INVALID_ARG_SIZE)
    REMAT_CL_NAME(CL_INVALID_KERNEL_ARGS)
    REMAT_CL_NAME(CL_INVALID_WORK_DIMENSION)
    REMAT_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
    REMAT_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
    REMAT_CL_NAME(CL_INVALID_GLOBAL_OFFSET)
    REMAT_CL_NAME(CL_INVALID_EVENT_WAIT_LIST)
    REMAT_CL_NAME(CL_INVALID_EVENT)
    REMAT_CL_NAME(CL_INVALID_OPERATION)
    REMAT_CL_NAME(CL_INVALID_GL_OBJECT)
    REMAT_CL_NAME(CL_INVALID_BUFFER_SIZE)
    REMAT_CL_NAME(CL_INVALID_MIP_LEVEL)
    REMAT_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
    REMAT_CL_NAME(CL_INVALID_PROPERTY)
    REMAT_CL_NAME(CL_INVALID_IMAGE_DESCRIPTOR)
    REMAT_CL_NAME(CL_INVALID_COMPILER_OPTIONS)
    REMAT_CL_NAME(CL_INVALID_LINKER_OPTIONS)
    REMAT_CL_NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef REMAT_CL_NAME
    case kPlatformNotFoundKhr: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: break;
  }
  // CLBlast's own codes (clblast::StatusCode) live at -1024 and below / -2048 and below.
  if (status <= -1024 && status > -2048) return "CLBlast error (see clblast.h StatusCode)";
  if (status <= -2048) return "CLBlast host error (see clblast.h StatusCode)";
  return "unknown OpenCL status";
}

remat_status cl_fail(ErrorBuffer* err, cl_int status, remat_status otherwise, const char* what) {
  return set_error(err, is_exhaustion(status) ? REMAT_ERROR_RESOURCE_EXHAUSTED : otherwise,
                   "opencl: %s failed: %s (%d)", what, cl_error_name(status),
                   static_cast<int>(status));
}

remat_status choose_device(const char* spec, DeviceChoice* out_choice, ErrorBuffer* err) {
  const char* colon = strchr(spec, ':');
  const char* spec_end = spec + strlen(spec);
  unsigned want_platform = 0, want_device = 0;
  const bool any = spec[0] == '\0';
  const bool has_device = colon != nullptr;
  if (!any && (!parse_index(spec, colon ? colon : spec_end, &want_platform) ||
               (has_device && !parse_index(colon + 1, spec_end, &want_device)))) {
    return set_error(
        err, REMAT_ERROR_INVALID_ARGUMENT,
        "opencl: device '%s' is not PLATFORM:DEVICE (e.g. opencl:0:0; see `remat devices`)", spec);
  }
  cl_platform_id platforms[kMaxPlatforms];
  const cl_uint n_platforms = platform_ids(platforms);
  if (n_platforms == 0) {
    return set_error(
        err, REMAT_ERROR_UNAVAILABLE,
        "opencl: no OpenCL platform found (no ICD installed, or none usable; with PoCL, "
        "check that POCL_CACHE_DIR is writable)");
  }
  cl_device_id devices[kMaxDevices];
  if (any) {
    // A GPU first, wherever it is; else the first device of any kind.
    const cl_device_type preference[2] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL};
    for (cl_device_type type : preference) {
      for (cl_uint p = 0; p < n_platforms; ++p) {
        if (device_ids(platforms[p], type, devices) == 0) continue;
        // Report the device's index in the platform's full list, as `remat devices` numbers them.
        cl_device_id all[kMaxDevices];
        const cl_uint n_all = device_ids(platforms[p], CL_DEVICE_TYPE_ALL, all);
        unsigned index = 0;
        for (cl_uint d = 0; d < n_all; ++d) {
          if (all[d] == devices[0]) index = d;
        }
        *out_choice = DeviceChoice{platforms[p], devices[0], p, index};
        return REMAT_OK;
      }
    }
    return set_error(err, REMAT_ERROR_UNAVAILABLE, "opencl: %u platform(s) but no OpenCL device",
                     n_platforms);
  }
  if (want_platform >= n_platforms) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE,
                     "opencl: no platform %u (this machine has %u: 0..%u)", want_platform,
                     n_platforms, n_platforms - 1);
  }
  const cl_uint n_devices = device_ids(platforms[want_platform], CL_DEVICE_TYPE_ALL, devices);
  if (want_device >= n_devices) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE,
                     "opencl: platform %u has no device %u (it has %u)", want_platform, want_device,
                     n_devices);
  }
  *out_choice =
      DeviceChoice{platforms[want_platform], devices[want_device], want_platform, want_device};
  return REMAT_OK;
}

}  // namespace opencl

int list_opencl_devices(char* out, size_t capacity) {
  using namespace opencl;
  if (out == nullptr || capacity == 0) return -1;
  out[0] = '\0';
  size_t used = 0;
  cl_platform_id platforms[kMaxPlatforms];
  const cl_uint n_platforms = platform_ids(platforms);
  if (n_platforms == 0) {
    append(out, capacity, &used, "(opencl: unavailable: no OpenCL platform found)\n");
    return 0;
  }
  int count = 0;
  for (cl_uint p = 0; p < n_platforms; ++p) {
    char platform_name[128] = "?";
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof(platform_name) - 1, platform_name,
                      nullptr);
    cl_device_id devices[kMaxDevices];
    const cl_uint n_devices = device_ids(platforms[p], CL_DEVICE_TYPE_ALL, devices);
    if (n_devices == 0)
      append(out, capacity, &used, "opencl:%u    %s: no device\n", p, platform_name);
    for (cl_uint d = 0; d < n_devices; ++d) {
      char name[128] = "?", version[64] = "?";
      cl_device_type type = 0;
      cl_ulong memory = 0;
      cl_uint units = 0;
      clGetDeviceInfo(devices[d], CL_DEVICE_NAME, sizeof(name) - 1, name, nullptr);
      clGetDeviceInfo(devices[d], CL_DEVICE_OPENCL_C_VERSION, sizeof(version) - 1, version,
                      nullptr);
      clGetDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
      clGetDeviceInfo(devices[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(memory), &memory, nullptr);
      clGetDeviceInfo(devices[d], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(units), &units, nullptr);
      append(out, capacity, &used, "opencl:%u:%u  %s / %s (%s, %s, %llu MiB, %u compute units)\n",
             p, d, platform_name, name, type_name(type), version,
             static_cast<unsigned long long>(memory >> 20), units);
      ++count;
    }
  }
  if (count == 0) append(out, capacity, &used, "(opencl: unavailable: no OpenCL device found)\n");
  return count;
}

}  // namespace remat
