// Opening, feeding and timing a session for the bench programs (bench_session.h).
#include "bench/bench_session.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "io/synthetic_task.h"
#include "runtime/port.h"

namespace remat_bench {
namespace {

[[noreturn]] void die(const std::string& model, const char* message) {
  std::fprintf(stderr, "%s: %s\n", model.c_str(), message);
  std::exit(1);
}

double ms_since(uint64_t start) { return static_cast<double>(remat::port_now_ns() - start) * 1e-6; }

}  // namespace

FedSession open_session(const std::vector<uint8_t>& plan_bytes, const std::string& model,
                        int64_t batch, const std::string& backend, size_t threads,
                        const remat_communicator* communicator) {
  FedSession fed;
  char message[512];
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = backend.c_str();
  options.threads = threads;
  options.communicator = communicator;
  if (remat_plan_open(plan_bytes.data(), plan_bytes.size(), &fed.plan, message, sizeof(message)) !=
      REMAT_OK) {
    die(model, message);
  }
  const uint64_t create_start = remat::port_now_ns();
  if (remat_session_create(fed.plan, &options, &fed.session, message, sizeof(message)) !=
      REMAT_OK) {
    die(model, message);
  }
  fed.create_ms = ms_since(create_start);
  remat::io::SyntheticTask task(model, batch, 0);
  const auto names = task.names();
  const auto values = task.batch(0);
  for (size_t i = 0; i < names.size(); ++i) {
    if (remat_session_set_input(fed.session, names[i].c_str(), values[i].data(),
                                values[i].size()) != REMAT_OK) {
      die(model, remat_session_last_error(fed.session));
    }
  }
  return fed;
}

void close_session(FedSession& fed) {
  remat_session_destroy(fed.session);
  remat_plan_close(fed.plan);
  fed = FedSession();
}

StepTimes time_steps(const std::vector<uint8_t>& plan_bytes, const std::string& model,
                     int64_t batch, const std::string& backend, int warmup, int steps,
                     size_t threads, const remat_communicator* communicator) {
  FedSession fed = open_session(plan_bytes, model, batch, backend, threads, communicator);
  StepTimes t;
  t.create_ms = fed.create_ms;
  for (int s = 0; s < warmup + steps; ++s) {
    const uint64_t start = remat::port_now_ns();
    if (remat_session_step(fed.session, nullptr) != REMAT_OK)
      die(model, remat_session_last_error(fed.session));
    const double ms = ms_since(start);
    if (s == 0) t.first_step_ms = ms;
    if (s >= warmup) t.timed_ms.push_back(ms);
  }
  std::sort(t.timed_ms.begin(), t.timed_ms.end());
  close_session(fed);
  return t;
}

StepFlags parse_step_flags(int argc, char** argv, int default_warmup) {
  StepFlags flags;
  flags.warmup = default_warmup;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc)
      flags.steps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--warmup" && i + 1 < argc)
      flags.warmup = std::max(0, std::atoi(argv[++i]));
    else if (a == "--backend" && i + 1 < argc)
      flags.backend = argv[++i];
    else if (a == "--threads" && i + 1 < argc)
      flags.threads = static_cast<size_t>(std::max(0, std::atoi(argv[++i])));
    else
      flags.specs.push_back(a);
  }
  return flags;
}

}  // namespace remat_bench
