// Benchmark: how much of the spill copy time a backend hides behind compute, measured against
// the compiler's model. It measures; it asserts nothing.
//
//   build/bench/spill_time [--backend B] [--steps N] MODEL@BATCH STRATEGY DEVICE_BUDGET
//
// 1. The backend's copy bandwidth: each checkpoint the plan spills is copied out and back
//    through the backend's own spill / prefetch / wait ops, alone (median of 3).
// 2. The step without spills (STRATEGY alone) and with them (STRATEGY + DEVICE_BUDGET), both
//    with the cost model set to the measured bandwidth and the compute rate the no-spill step
//    showed, so that the model's placement and its "hidden" figure describe this machine.
// 3. Measured hidden share = 1 - (step with spills - step without) / measured copy time.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_session.h"
#include "compiler/compiler.h"
#include "io/sizes.h"
#include "remat/remat.h"
#include "runtime/backend_registry.h"
#include "runtime/port.h"

namespace {

[[noreturn]] void die(const std::string& what, const char* message) {
  std::fprintf(stderr, "spill_time: %s: %s\n", what.c_str(), message);
  std::exit(1);
}

remat::compiler::CompileOptions options_for(const std::string& model, int64_t batch,
                                            const std::string& strategy) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = batch;
  o.strategy = strategy;
  o.optimizer = "adam:lr=0.0001";
  return o;
}

remat::TensorRef bytes_tensor(remat::Region region, uint64_t bytes) {
  remat::TensorRef t{};
  t.region = region;
  t.dtype = REMAT_DTYPE_F32;
  t.rank = 1;
  t.bytes = bytes;
  t.numel = static_cast<int64_t>(bytes / 4);
  t.dims[0] = t.numel;
  return t;
}

remat::OpCall copy_call(remat::OpCode code, const remat::TensorRef* in, const remat::TensorRef* out,
                        remat::OpCallLists* lists) {
  remat::OpCall call{};
  call.code = static_cast<uint16_t>(code);
  call.num_inputs = 1;
  lists->in[0] = in;
  call.num_outputs = out != nullptr ? 1 : 0;
  lists->out[0] = out;
  call.inputs = lists->in;
  call.outputs = lists->out;
  return call;
}

// Seconds the backend takes to copy each of |sizes| out to host and back, one at a time.
double measured_copy_seconds(const std::string& backend, const std::vector<uint64_t>& sizes) {
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<uint8_t> arena(largest + 256), persistent(256), host(largest + 256);
  remat::RegionSetup regions{};
  const bool on_host = backend.substr(0, backend.find(':')) == "cpu";
  regions.arena = on_host ? arena.data() : nullptr;
  regions.arena_bytes = arena.size();
  regions.persistent = on_host ? persistent.data() : nullptr;
  regions.persistent_bytes = persistent.size();
  regions.host = host.data();
  regions.host_bytes = host.size();
  regions.alignment = 1;
  char text[512] = "";
  remat::ErrorBuffer err{text, sizeof(text)};
  remat::Backend* b = nullptr;
  if (remat::create_backend(backend.c_str(), regions, &b, &err) != REMAT_OK) die(backend, text);
  const remat::StepContext ctx{0, 0};
  double total = 0;
  for (uint64_t bytes : sizes) {
    const remat::TensorRef x = bytes_tensor(remat::Region::kArena, bytes);
    const remat::TensorRef slot = bytes_tensor(remat::Region::kHost, bytes);
    std::vector<double> times;
    remat::OpCallLists spill, wait, prefetch;
    for (int rep = 0; rep < 3; ++rep) {
      const uint64_t start = remat::port_now_ns();
      const remat_status s =
          b->run_op(copy_call(remat::OpCode::kSpill, &x, &slot, &spill), ctx, &err) == REMAT_OK &&
                  b->run_op(copy_call(remat::OpCode::kWait, &x, nullptr, &wait), ctx, &err) ==
                      REMAT_OK &&
                  b->run_op(copy_call(remat::OpCode::kPrefetch, &slot, &x, &prefetch), ctx, &err) ==
                      REMAT_OK &&
                  b->run_op(copy_call(remat::OpCode::kWait, &x, nullptr, &wait), ctx, &err) ==
                      REMAT_OK
              ? b->sync(&err)
              : REMAT_ERROR_INTERNAL;
      if (s != REMAT_OK) die(backend, text);
      times.push_back(static_cast<double>(remat::port_now_ns() - start) * 1e-9);
    }
    std::sort(times.begin(), times.end());
    total += times[1];
  }
  remat::destroy_backend(b);
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 5;
  std::string backend = "cpu";
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc)
      steps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--backend" && i + 1 < argc)
      backend = argv[++i];
    else
      positional.push_back(a);
  }
  if (positional.size() != 3 || positional[0].find('@') == std::string::npos) {
    std::fprintf(
        stderr, "usage: spill_time [--backend B] [--steps N] MODEL@BATCH STRATEGY DEVICE_BUDGET\n");
    return 2;
  }
  const std::string model = positional[0].substr(0, positional[0].find('@'));
  const int64_t batch = std::atoll(positional[0].substr(positional[0].find('@') + 1).c_str());
  const std::string strategy = positional[1];
  try {
    remat::compiler::CompileOptions o = options_for(model, batch, strategy);
    const auto plain = remat::compiler::compile(o);
    const remat_bench::StepTimes plain_t =
        remat_bench::time_steps(plain.plan, model, batch, backend, 1, steps);
    const double plain_s = plain_t.median_ms() * 1e-3;
    // A first spilled plan tells which checkpoints spill; their copies give the bandwidth.
    o.device_budget = remat::io::parse_size(positional[2], "DEVICE_BUDGET");
    const auto first = remat::compiler::compile(o);
    std::vector<uint64_t> sizes;
    for (const std::string& name : first.report.spilled) {
      sizes.push_back(first.graph.tensors[first.graph.find(name)].bytes());
    }
    if (sizes.empty()) die(positional[2], "the device budget spills nothing");
    uint64_t copied = 0;
    for (uint64_t s : sizes) copied += 2 * s;
    o.copy_bandwidth = static_cast<double>(copied) / measured_copy_seconds(backend, sizes);
    o.compute_rate = plain.report.step_flops / plain_s;
    o.asynchronous_copies = remat::compiler::target_profile(backend).asynchronous_copies;
    const auto spilled = remat::compiler::compile(o);
    sizes.clear();  // The calibrated model may spill others: time those.
    for (const std::string& name : spilled.report.spilled) {
      sizes.push_back(spilled.graph.tensors[spilled.graph.find(name)].bytes());
    }
    const double copy_s = measured_copy_seconds(backend, sizes);
    const remat_bench::StepTimes spilled_t =
        remat_bench::time_steps(spilled.plan, model, batch, backend, 1, steps);
    const double spilled_s = spilled_t.median_ms() * 1e-3;
    const auto& r = spilled.report;
    // A copy time within the runs' own spread cannot be told from noise: say so, not a share.
    const double spread = std::max(plain_t.spread_ms(), spilled_t.spread_ms()) * 1e-3;
    char measured[96];
    if (copy_s > spread) {
      std::snprintf(measured, sizeof(measured), "%.0f%%",
                    100.0 * (1.0 - (spilled_s - plain_s) / copy_s));
    } else {
      std::snprintf(measured, sizeof(measured), "below noise (copies %.1f ms, steps vary %.1f ms)",
                    copy_s * 1e3, spread * 1e3);
    }
    std::printf(
        "# remat spill copies on backend %s; %u hardware threads; median of %d steps after 1 "
        "warm-up; "
        "measured copy %.3g B/s, compute %.3g FLOP/s\n",
        backend.c_str(), std::thread::hardware_concurrency(), steps, o.copy_bandwidth,
        o.compute_rate);
    std::printf(
        "| model | batch | strategy | arena MiB (no spill) | arena MiB | host MiB | spills | step "
        "ms (no spill) "
        "| step ms | step ms added | copy ms (measured) | hidden (measured) | hidden (model) |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::printf(
        "| %s | %lld | %s + device %s | %.1f | %.1f | %.1f | %zu | %.1f | %.1f | %.1f | %.1f | %s "
        "| %.0f%% |\n",
        model.c_str(), static_cast<long long>(batch), strategy.c_str(), positional[2].c_str(),
        static_cast<double>(plain.report.arena_bytes) / 1048576.0,
        static_cast<double>(r.arena_bytes) / 1048576.0,
        static_cast<double>(r.host_bytes) / 1048576.0, r.spilled.size(), plain_s * 1e3,
        spilled_s * 1e3, (spilled_s - plain_s) * 1e3, copy_s * 1e3, measured,
        r.copy_seconds > 0 ? 100.0 * r.hidden_copy_seconds / r.copy_seconds : 0.0);
  } catch (const std::exception& e) {
    die(model, e.what());
  }
  return 0;
}
