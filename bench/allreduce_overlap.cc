// Benchmark: how much of data-parallel training's communication the compiler's bucket placement
// hides behind the backward pass (docs/data-parallel.md). It measures; it asserts nothing.
//
//   build/bench/allreduce_overlap [--steps N] [--bucket-size SIZE] [--delay-ms D] MODEL@BATCH...
//
// One rank whose communicator models a link: each bucket's sum takes D ms (default: the step's
// own time / (2 x buckets), so that the sums take half the step in all), one bucket at a time
// in the order they are started (a bucket started while the link is busy waits for it), and
// changes no value. The step is timed with that communicator and with one that answers at once;
// the difference is the communication the step waited for, and
//   hidden = 1 - (step with the link - step without) / (buckets x D).
// A placement that waited for each bucket right after starting it would hide nothing.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_session.h"
#include "compiler/compiler.h"
#include "io/sizes.h"
#include "remat/remat.h"

namespace {

using Clock = std::chrono::steady_clock;

// A link of one rank: sums take |delay| each, one after another.
struct Link {
  Clock::duration delay{};
  Clock::time_point free{};
  std::map<uint32_t, Clock::time_point> done;
};

remat_status link_start(void* user, uint32_t bucket, const remat_buffer*, uint32_t) {
  Link* link = static_cast<Link*>(user);
  const Clock::time_point begin = std::max(Clock::now(), link->free);
  link->free = begin + link->delay;
  link->done[bucket] = link->free;
  return REMAT_OK;
}

remat_status link_wait(void* user, uint32_t bucket) {
  std::this_thread::sleep_until(static_cast<Link*>(user)->done[bucket]);
  return REMAT_OK;
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: allreduce_overlap [--steps N] [--bucket-size SIZE] [--delay-ms D] "
               "MODEL@BATCH...\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 5;
  uint64_t bucket_bytes = uint64_t{1} << 20;
  double delay_ms = -1;  // default: the buckets' sums take half the step's own time in all
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (a == "--bucket-size" && i + 1 < argc) {
      bucket_bytes = remat::io::parse_size(argv[++i], "--bucket-size");
    } else if (a == "--delay-ms" && i + 1 < argc) {
      delay_ms = std::atof(argv[++i]);
    } else if (!a.empty() && a[0] != '-' && a.find('@') != std::string::npos) {
      models.push_back(a);
    } else {
      usage();
    }
  }
  if (models.empty() || steps < 1) usage();
  std::printf(
      "# machine: %s, %ld cores; one CPU thread; bucket size %llu bytes; median of %d "
      "steps after 1 warm-up\n",
      cpu_name().c_str(), sysconf(_SC_NPROCESSORS_ONLN),
      static_cast<unsigned long long>(bucket_bytes), steps);
  std::printf("%-60s %7s %10s %12s %12s %12s %8s\n", "model@batch", "buckets", "step ms", "link ms",
              "with link", "waited ms", "hidden");
  for (const std::string& spec : models) {
    const std::string model = spec.substr(0, spec.find('@'));
    const int64_t batch = std::atoll(spec.substr(spec.find('@') + 1).c_str());
    remat::compiler::CompileOptions o;
    o.model = model;
    o.batch = batch;
    o.optimizer = "sgd:lr=0.01";
    o.data_parallel.enabled = true;
    o.data_parallel.bucket_bytes = bucket_bytes;
    const remat::compiler::CompileResult r = remat::compiler::compile(o);
    const size_t buckets = r.report.allreduce_buckets;
    Link instant;
    const remat_communicator at_once{
        sizeof(remat_communicator), 0, 1, &instant, link_start, link_wait, REMAT_MEMORY_HOST, 0};
    const double step_ms =
        remat_bench::time_steps(r.plan, model, batch, "cpu", 1, steps, 1, &at_once).median_ms();
    Link link;
    const double per_bucket =
        delay_ms >= 0 ? delay_ms : step_ms / (2.0 * static_cast<double>(buckets));
    link.delay = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double, std::milli>(per_bucket));
    const remat_communicator delayed{sizeof(remat_communicator), 0, 1, &link, link_start, link_wait,
                                     REMAT_MEMORY_HOST,          0};
    const double with_ms =
        remat_bench::time_steps(r.plan, model, batch, "cpu", 1, steps, 1, &delayed).median_ms();
    const double link_ms = per_bucket * static_cast<double>(buckets);
    const double waited = with_ms - step_ms;
    std::printf("%-60s %7zu %10.2f %12.2f %12.2f %12.2f %7.0f%%\n", spec.c_str(), buckets, step_ms,
                link_ms, with_ms, waited, link_ms > 0 ? 100.0 * (1.0 - waited / link_ms) : 0.0);
  }
  return 0;
}
