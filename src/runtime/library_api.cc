// C ABI of the library itself: its version and the backends and devices compiled into it.
#include <string.h>

#include "remat/remat.h"
#include "runtime/backend_registry.h"
#include "runtime/struct_size.h"

#if !defined(REMAT_VERSION_MAJOR) || !defined(REMAT_VERSION_MINOR) || !defined(REMAT_VERSION_PATCH)
#error "the build defines REMAT_VERSION_MAJOR/MINOR/PATCH from the project version"
#endif

namespace {

// remat_version_info of REMAT_API_VERSION 1 ends with plan_format_max.
constexpr size_t kVersionInfoFirstSize =
    offsetof(remat_version_info, plan_format_max) + sizeof(uint32_t);

}  // namespace

extern "C" {

remat_status remat_version(remat_version_info* out_info) {
  if (out_info == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  const size_t given = out_info->struct_size;
  if (remat::check_struct_size("remat_version_info", given, kVersionInfoFirstSize,
                               sizeof(remat_version_info), nullptr) != REMAT_OK) {
    return REMAT_ERROR_INVALID_ARGUMENT;
  }
  remat_version_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = given;
  info.major = REMAT_VERSION_MAJOR;
  info.minor = REMAT_VERSION_MINOR;
  info.patch = REMAT_VERSION_PATCH;
  info.api_version = REMAT_API_VERSION;
  info.plan_format_min = REMAT_PLAN_FORMAT_OLDEST_VERSION;
  info.plan_format_max = REMAT_PLAN_FORMAT_VERSION;
  memcpy(out_info, &info, given);  // an older caller's struct gets the fields it has
  return REMAT_OK;
}

uint32_t remat_backend_count(void) { return static_cast<uint32_t>(remat::backend_count()); }

remat_status remat_backend_name(uint32_t index, const char** out_name) {
  if (out_name == nullptr) return REMAT_ERROR_INVALID_ARGUMENT;
  *out_name = remat::backend_name(index);
  return *out_name != nullptr ? REMAT_OK : REMAT_ERROR_NOT_FOUND;
}

remat_status remat_backend_devices(uint32_t index, uint32_t* out_device_count, char* out_text,
                                   size_t text_capacity) {
  if (out_device_count != nullptr) *out_device_count = 0;
  if (out_text == nullptr || text_capacity == 0) return REMAT_ERROR_INVALID_ARGUMENT;
  out_text[0] = '\0';
  const int devices = remat::list_backend_devices(index, out_text, text_capacity);
  if (devices < 0) {
    out_text[0] = '\0';
    return REMAT_ERROR_NOT_FOUND;
  }
  if (out_device_count != nullptr) *out_device_count = static_cast<uint32_t>(devices);
  return REMAT_OK;
}

}  // extern "C"
