// What the bench programs share: one plan open in a session on a backend, fed a fixed batch of
// the model's synthetic task, timed step by step. Any error ends the program with a message.
#ifndef REMAT_BENCH_BENCH_SESSION_H_
#define REMAT_BENCH_BENCH_SESSION_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "remat/remat.h"

namespace remat_bench {

/// Step times of one session, in milliseconds.
struct StepTimes {
  double create_ms = 0;          ///< remat_session_create, including parameter initialisation.
  double first_step_ms = 0;      ///< The first step (warm-up included or not).
  std::vector<double> timed_ms;  ///< The steps after the warm-up, sorted ascending.
  /// Median of |timed_ms|.
  double median_ms() const { return timed_ms[timed_ms.size() / 2]; }
  /// Slowest minus fastest of |timed_ms|: how small a difference the run can resolve.
  double spread_ms() const { return timed_ms.back() - timed_ms.front(); }
};

/// A plan open in a session whose inputs hold step 0 of |model|'s synthetic task.
struct FedSession {
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;
  double create_ms = 0;  ///< remat_session_create, including parameter initialisation.
};

/// Opens |plan_bytes| (a plan of |model| at |batch|) on |backend| (CPU: |threads| threads, 0 for
/// one per hardware thread; |communicator| for a data-parallel plan) and sets the inputs of
/// step 0 of the synthetic task. Exits with status 1 and a message naming |model| on any error.
/// close_session() frees it.
FedSession open_session(const std::vector<uint8_t>& plan_bytes, const std::string& model,
                        int64_t batch, const std::string& backend, size_t threads,
                        const remat_communicator* communicator = nullptr);

/// Destroys the session and closes the plan of |fed|.
void close_session(FedSession& fed);

/// Opens |plan_bytes| (a plan of |model| at |batch|) on |backend| (CPU: |threads| threads, 0 for
/// one per hardware thread), sets the inputs of step 0 of the synthetic task, runs |warmup| +
/// |steps| steps (|steps| >= 1) and closes the session. Exits with status 1 and a message
/// naming |model| on any error.
StepTimes time_steps(const std::vector<uint8_t>& plan_bytes, const std::string& model,
                     int64_t batch, const std::string& backend, int warmup, int steps,
                     size_t threads = 0, const remat_communicator* communicator = nullptr);

/// The flags step_time and step_pairs share, and their other arguments.
struct StepFlags {
  int steps = 10;               ///< --steps N (at least 1): the timed steps.
  int warmup = 0;               ///< --warmup N (at least 0): the steps run before them.
  std::string backend = "cpu";  ///< --backend B.
  size_t threads = 0;           ///< --threads N: the CPU's threads, 0 for one per hardware thread.
  std::vector<std::string> specs;  ///< Every other argument, in order.
};

/// Reads --steps, --warmup, --backend and --threads from |argv| (a flag's value is the next
/// argument); --warmup is |default_warmup| unless given.
StepFlags parse_step_flags(int argc, char** argv, int default_warmup);

}  // namespace remat_bench

#endif  // REMAT_BENCH_BENCH_SESSION_H_
