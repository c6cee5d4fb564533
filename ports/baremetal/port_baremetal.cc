// Bare-metal port: allocations from a static pool, handed out in order like a stack. A block
// freed while it is the last one handed out goes back to the pool (with any freed block below
// it), so the temporary tables of plan verification and parameter initialisation, freed in
// reverse order, do not stay allocated; the session's own tables live until it is destroyed.
// No threads: the CPU kernels run on the caller's.
// Size the pool at build time with -DREMAT_BAREMETAL_POOL_BYTES=N; firmware that passes its
// own arena and persistent region needs only the session's small tables from it.
#include <stddef.h>
#include <stdint.h>

#include "ports/baremetal/remat_baremetal.h"
#include "runtime/port.h"

#if !defined(REMAT_BAREMETAL_POOL_BYTES)
#define REMAT_BAREMETAL_POOL_BYTES (256u * 1024u)
#endif

namespace remat {
namespace {

alignas(64) unsigned char g_pool[REMAT_BAREMETAL_POOL_BYTES];
size_t g_used = 0;

// The blocks handed out, most recent last: where each starts, the pool's use before it, and
// whether it was freed. Blocks past the record's capacity are never taken back.
constexpr int kRecordCapacity = 64;
struct Block {
  const void* start;
  size_t used_before;
  bool freed;
};
Block g_blocks[kRecordCapacity];
int g_block_count = 0;
bool g_record_overflowed = false;

}  // namespace

void* port_alloc(size_t bytes, size_t alignment) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(g_pool);
  const uintptr_t end = base + sizeof(g_pool);
  const uintptr_t start =
      (base + g_used + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
  if (start > end || bytes > end - start) return nullptr;  // written so that nothing wraps
  if (g_block_count < kRecordCapacity && !g_record_overflowed) {
    g_blocks[g_block_count++] = Block{reinterpret_cast<const void*>(start), g_used, false};
  } else {
    g_record_overflowed = true;  // blocks below this one can no longer be taken back either
  }
  g_used = start + bytes - base;
  return reinterpret_cast<void*>(start);
}

void port_free(void* memory) {
  if (memory == nullptr || g_record_overflowed) return;
  for (int i = g_block_count - 1; i >= 0; --i) {
    if (g_blocks[i].start == memory) {
      g_blocks[i].freed = true;
      break;
    }
  }
  while (g_block_count > 0 && g_blocks[g_block_count - 1].freed)
    g_used = g_blocks[--g_block_count].used_before;
}

uint64_t port_now_ns() { return 0; }

uint32_t port_hardware_threads() { return 1; }

PortTeam* port_team_create(uint32_t) { return nullptr; }

void port_team_run(PortTeam*, PortTask task, void* context) { task(context, 0); }

void port_team_destroy(PortTeam*) {}

}  // namespace remat

size_t remat_baremetal_pool_used(void) { return remat::g_used; }

size_t remat_baremetal_pool_size(void) { return sizeof(remat::g_pool); }

// A class with a virtual destructor (remat::Backend) has a deleting destructor in its vtable,
// which names operator delete even though remat never deletes (objects live in port memory and
// are destroyed in place). Defined here, it keeps libstdc++'s heap out of firmware.
void operator delete(void*) noexcept {}
void operator delete(void*, size_t) noexcept {}
