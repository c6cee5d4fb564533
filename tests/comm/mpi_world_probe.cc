// One rank of tests/comm/test_mpi_world.py under mpirun: MpiWorld's collective calls, made as
// `remat train` makes them, in one of three scenarios.
//
//   mpi_world_probe agree TIMEOUT          every rank makes every call: prints the results
//   mpi_world_probe late-agreement TIMEOUT rank 1 never agrees: rank 0 must end the job
//   mpi_world_probe late-sum TIMEOUT       rank 1 never sums bucket 3: rank 0 must end the job
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "comm/mpi_communicator.h"

namespace {

using remat::comm::MpiWorld;

// Sums two buckets of a step, started together and waited in order as a plan does: bucket 0
// holds rank + 1 in three floats and 0.5 in two, bucket 1 holds rank in four.
bool sums_hold(const MpiWorld& world) {
  const remat_communicator* c = world.communicator();
  const float n = static_cast<float>(world.size());
  std::vector<float> a(3, static_cast<float>(world.rank() + 1)), b(2, 0.5f),
      d(4, static_cast<float>(world.rank()));
  const remat_buffer first[] = {{a.data(), a.size()}, {b.data(), b.size()}};
  const remat_buffer second[] = {{d.data(), d.size()}};
  if (c->allreduce_start(c->user, 0, first, 2) != REMAT_OK ||
      c->allreduce_start(c->user, 1, second, 1) != REMAT_OK ||
      c->allreduce_wait(c->user, 0) != REMAT_OK || c->allreduce_wait(c->user, 1) != REMAT_OK)
    return false;
  for (float x : a)
    if (x != n * (n + 1) / 2) return false;
  for (float x : b)
    if (x != 0.5f * n) return false;
  for (float x : d)
    if (x != n * (n - 1) / 2) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mpi_world_probe agree|late-agreement|late-sum TIMEOUT\n");
    return 2;
  }
  const char* scenario = argv[1];
  std::unique_ptr<MpiWorld> world = MpiWorld::join(std::atof(argv[2]));
  const int rank = world->rank(), size = world->size();
  if (std::strcmp(scenario, "agree") == 0) {
    // Twice, so that a bucket's second sum is told from its first.
    bool sums = true;
    for (int step = 0; step < 2; ++step) sums = sums && sums_hold(*world);
    const bool same = world->same_everywhere(42, "a constant");
    const bool ranks_same = world->same_everywhere(static_cast<uint64_t>(rank), "the rank");
    const uint64_t highest = world->highest_everywhere(static_cast<uint64_t>(rank), "the rank");
    std::printf("rank %d of %d: sums %s, constant %s, ranks %s, highest rank %llu\n", rank, size,
                sums ? "right" : "WRONG", same ? "same" : "differs", ranks_same ? "same" : "differ",
                static_cast<unsigned long long>(highest));
    return 0;
  }
  const bool late_agreement = std::strcmp(scenario, "late-agreement") == 0;
  if (!late_agreement && std::strcmp(scenario, "late-sum") != 0) {
    std::fprintf(stderr, "mpi_world_probe: unknown scenario %s\n", scenario);
    return 2;
  }
  if (rank == 1) {
    sleep(60);  // a rank that stopped answering: mpirun ends it once rank 0 has ended the job
    return 3;
  }
  if (late_agreement) {
    world->highest_everywhere(0, "the probe");
  } else {
    std::vector<float> x(8, 1.0f);
    const remat_buffer part = {x.data(), x.size()};
    const remat_communicator* c = world->communicator();
    c->allreduce_start(c->user, 3, &part, 1);
    c->allreduce_wait(c->user, 3);
  }
  std::printf("rank %d: the call returned without rank 1\n", rank);
  return 0;
}
