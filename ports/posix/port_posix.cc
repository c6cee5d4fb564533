// POSIX port: aligned allocation from the C library and CLOCK_MONOTONIC.
#include <stdlib.h>
#include <time.h>

#include "runtime/port.h"

namespace remat {

void* port_alloc(size_t bytes, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* pointer = nullptr;
  if (posix_memalign(&pointer, alignment, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  return pointer;
}

void port_free(void* pointer) { free(pointer); }

uint64_t port_now_ns() {
  struct timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace remat
