// Bare-metal port: a bump allocator over a static pool; memory is never given back. No threads:
// the CPU kernels run on the caller's.
// Size the pool at build time with -DREMAT_BAREMETAL_POOL_BYTES=N; firmware that passes its
// own arena and persistent region needs only the session's small tables from it.
#include <stdint.h>

#include "runtime/port.h"

#if !defined(REMAT_BAREMETAL_POOL_BYTES)
#define REMAT_BAREMETAL_POOL_BYTES (256u * 1024u)
#endif

namespace remat {
namespace {

alignas(64) unsigned char g_pool[REMAT_BAREMETAL_POOL_BYTES];
size_t g_used = 0;

}  // namespace

void* port_alloc(size_t bytes, size_t alignment) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(g_pool);
  const uintptr_t end = base + sizeof(g_pool);
  const uintptr_t start = (base + g_used + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
  if (start > end || bytes > end - start) return nullptr;  // written so that nothing wraps
  g_used = start + bytes - base;
  return reinterpret_cast<void*>(start);
}

void port_free(void*) {}

uint64_t port_now_ns() { return 0; }

uint32_t port_hardware_threads() { return 1; }

PortTeam* port_team_create(uint32_t) { return nullptr; }

void port_team_run(PortTeam*, PortTask task, void* context) { task(context, 0); }

void port_team_destroy(PortTeam*) {}

}  // namespace remat
