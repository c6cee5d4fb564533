// Backend lookup and device listing over the list the build generates (backend_list.h: X(name)
// per backend).
#include "runtime/backend_registry.h"

#include <string.h>

#include "backend_list.h"
#include "runtime/port.h"

namespace remat {

// Each backend defines its factory and its device lister beside it.
#define REMAT_DECLARE_ENTRY_POINTS(name)                                               \
  remat_status create_##name##_backend(const char* device, const RegionSetup& regions, \
                                       Backend** out_backend, ErrorBuffer* err);       \
  int list_##name##_devices(char* out, size_t capacity);
REMAT_BACKEND_LIST(REMAT_DECLARE_ENTRY_POINTS)
#undef REMAT_DECLARE_ENTRY_POINTS

namespace {

struct Entry {
  const char* name;
  BackendFactory factory;
  DeviceLister lister;
};

#define REMAT_ENTRY(name) {#name, &create_##name##_backend, &list_##name##_devices},
const Entry kBackends[] = {REMAT_BACKEND_LIST(REMAT_ENTRY)};
#undef REMAT_ENTRY

constexpr size_t kBackendCount = sizeof(kBackends) / sizeof(kBackends[0]);

}  // namespace

size_t backend_count() { return kBackendCount; }

const char* backend_name(size_t index) {
  return index < kBackendCount ? kBackends[index].name : nullptr;
}

int list_backend_devices(size_t index, char* out, size_t capacity) {
  if (index >= kBackendCount) return -1;
  return kBackends[index].lister(out, capacity);
}

remat_status create_backend(const char* spec, const RegionSetup& regions, Backend** out_backend,
                            ErrorBuffer* err) {
  *out_backend = nullptr;
  const char* colon = strchr(spec, ':');
  const size_t name_length = colon ? static_cast<size_t>(colon - spec) : strlen(spec);
  for (const Entry& entry : kBackends) {
    if (strlen(entry.name) == name_length && strncmp(entry.name, spec, name_length) == 0) {
      return entry.factory(colon ? colon + 1 : "", regions, out_backend, err);
    }
  }
  char names[128] = "";
  for (const Entry& entry : kBackends) {
    if (names[0] != '\0') strncat(names, ", ", sizeof(names) - strlen(names) - 1);
    strncat(names, entry.name, sizeof(names) - strlen(names) - 1);
  }
  return set_error(err, REMAT_ERROR_UNAVAILABLE, "backend '%s' is not in this build (built in: %s)",
                   spec, names);
}

void destroy_backend(Backend* backend) {
  if (backend == nullptr) return;
  backend->~Backend();
  port_free(backend);
}

}  // namespace remat
