// POSIX port: aligned allocation from the C library, CLOCK_MONOTONIC, and a team of POSIX
// threads for the CPU kernels.
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <new>

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

uint32_t port_hardware_threads() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
    return static_cast<uint32_t>(CPU_COUNT(&set));
  }
#endif
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<uint32_t>(online) : 1u;
}

// The caller publishes a task by bumping |generation|; workers spin on it for a while (a step
// runs its ops back to back, so the next task usually comes within microseconds) and then
// sleep on |wake|. The last worker to finish wakes the caller the same way through |done|.
struct PortTeam {
  uint32_t started = 0;  // workers running (threads - 1 once created)
  pthread_t* workers = nullptr;
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
  pthread_cond_t done = PTHREAD_COND_INITIALIZER;
  std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> pending{0};
  bool stop = false;  // read by workers after a new generation (ordered by it)
  PortTask task = nullptr;
  void* context = nullptr;
};

namespace {

// Polls before sleeping: about 50 microseconds of pause instructions on current x86 cores.
constexpr int kSpins = 1 << 12;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

struct WorkerStart {
  PortTeam* team;
  uint32_t index;
};

// Returns once ready() holds: polls first, then sleeps on |cond|, which whoever makes ready()
// true signals under the team's mutex.
template <typename Ready>
void wait_until(PortTeam* team, pthread_cond_t* cond, const Ready& ready) {
  for (int i = 0; i < kSpins; ++i) {
    if (ready()) return;
    cpu_relax();
  }
  pthread_mutex_lock(&team->mutex);
  while (!ready()) pthread_cond_wait(cond, &team->mutex);
  pthread_mutex_unlock(&team->mutex);
}

void* worker_main(void* argument) {
  WorkerStart start = *static_cast<WorkerStart*>(argument);
  delete static_cast<WorkerStart*>(argument);
  PortTeam* team = start.team;
  uint32_t seen = 0;
  for (;;) {
    uint32_t now = seen;
    wait_until(team, &team->wake,
               [&] { return (now = team->generation.load(std::memory_order_acquire)) != seen; });
    seen = now;
    if (team->stop) return nullptr;
    team->task(team->context, start.index);
    if (team->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&team->mutex);
      pthread_cond_signal(&team->done);
      pthread_mutex_unlock(&team->mutex);
    }
  }
}

// Publishes the current task (or stop) to every worker.
void publish(PortTeam* team) {
  team->pending.store(team->started, std::memory_order_relaxed);
  pthread_mutex_lock(&team->mutex);
  team->generation.fetch_add(1, std::memory_order_release);
  pthread_cond_broadcast(&team->wake);
  pthread_mutex_unlock(&team->mutex);
}

}  // namespace

PortTeam* port_team_create(uint32_t threads) {
  if (threads < 2) return nullptr;
  PortTeam* team = new (std::nothrow) PortTeam();
  if (team == nullptr) return nullptr;
  team->workers = new (std::nothrow) pthread_t[threads - 1];
  if (team->workers == nullptr) {
    delete team;
    return nullptr;
  }
  for (uint32_t i = 1; i < threads; ++i) {
    WorkerStart* start = new (std::nothrow) WorkerStart{team, i};
    if (start == nullptr ||
        pthread_create(&team->workers[i - 1], nullptr, worker_main, start) != 0) {
      delete start;
      port_team_destroy(team);
      return nullptr;
    }
    ++team->started;
  }
  return team;
}

void port_team_run(PortTeam* team, PortTask task, void* context) {
  team->task = task;
  team->context = context;
  publish(team);
  task(context, 0);
  wait_until(team, &team->done,
             [team] { return team->pending.load(std::memory_order_acquire) == 0; });
}

void port_team_destroy(PortTeam* team) {
  if (team == nullptr) return;
  if (team->started > 0) {
    team->stop = true;
    publish(team);
    for (uint32_t i = 0; i < team->started; ++i) pthread_join(team->workers[i], nullptr);
  }
  delete[] team->workers;
  delete team;
}

}  // namespace remat
