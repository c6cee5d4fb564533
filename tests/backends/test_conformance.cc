// Backend conformance: the same checks against any backend, named by argv[1] or by the
// REMAT_TEST_BACKEND environment variable ("cpu", "opencl", "opencl:0:0", ...): training,
// recomputation, spilling, resuming, the op catalogue and 16-bit plans' training here; the checks
// a step makes of its data in test_conformance_step_checks.cc, how ops on 16-bit tensors run in
// test_conformance_widening.cc and the other test_conformance_*.cc.
//
// Tolerances against the CPU backend (docs/backends.md): after five steps every parameter
// satisfies |p - p_cpu| <= kAbsTol + kRelTol * |p_cpu| under SGD; under AdamW 99% do and all
// are within 2 * lr * steps (see kAdamOutsideShare). Recompute on one backend is exact.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/device_profiles.h"
#include "compiler/compiler.h"
#include "runtime/backend_registry.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "tests/backends/conformance_harness.h"
#include "tests/backends/op_cases.h"

namespace conformance {
namespace {

constexpr double kAbsTol = 1e-4;
constexpr double kRelTol = 1e-3;
// Adam divides by sqrt(v): a parameter whose gradient is rounding noise (e.g. attention key
// biases, whose exact gradient is 0) moves by about lr per step in a direction the noise
// picks, on any two backends alike. So under AdamW at most 1 in kAdamOutsideShare parameters
// may leave the tolerance above, and none may differ by more than 2 * lr * steps.
constexpr size_t kAdamOutsideShare = 100;
constexpr double kAdamBound = 2 * 0.01 * kSteps;

void parameters_after_five_steps_match_the_cpu_backend(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* model : kModels) {
    for (size_t o = 0; o < sizeof(kOptimizers) / sizeof(kOptimizers[0]); ++o) {
      const char* optimizer = kOptimizers[o];
      const std::vector<uint8_t> ref = train(model, optimizer, "none", "cpu");
      const std::vector<uint8_t> got = train(model, optimizer, "none", g_backend);
      assert_int_equal(ref.size(), got.size());
      const float* a = reinterpret_cast<const float*>(ref.data());
      const float* b = reinterpret_cast<const float*>(got.data());
      const size_t n = ref.size() / sizeof(float);
      size_t identical = 0, outside = 0, worst_at = 0;
      double worst = 0;  // Largest |diff|.
      for (size_t i = 0; i < n; ++i) {
        const double diff = fabs(static_cast<double>(a[i]) - b[i]);
        if (!(diff <= kAbsTol + kRelTol * fabs(static_cast<double>(a[i])))) ++outside;
        if (!(diff <= worst)) {
          worst = diff;
          worst_at = i;
        }
        identical += memcmp(&a[i], &b[i], sizeof(float)) == 0;
      }
      printf(
          "%s, %s: %zu/%zu parameters bit-identical to cpu, %zu outside abs %g + rel %g; largest "
          "diff %.3g "
          "(cpu %.9g, %s %.9g)\n",
          model, optimizer, identical, n, outside, kAbsTol, kRelTol, worst,
          static_cast<double>(a[worst_at]), g_backend.c_str(), static_cast<double>(b[worst_at]));
      const bool adam = o == 1;
      if (!adam && outside > 0)
        fail_msg("%s with %s: %zu parameters beyond tolerance", model, optimizer, outside);
      if (adam && (outside * kAdamOutsideShare > n || !(worst <= kAdamBound))) {
        fail_msg("%s with %s: %zu parameters beyond tolerance, largest diff %g", model, optimizer,
                 outside, worst);
      }
    }
  }
}

void check_strategy_is_byte_identical(const char* strategy) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* model : kModels) {
    for (const char* optimizer : kOptimizers) {
      if (train(model, optimizer, "none", g_backend, true) !=
          train(model, optimizer, strategy, g_backend, true)) {
        fail_msg("%s with %s on %s: --strategy %s differs from --strategy none", model, optimizer,
                 g_backend.c_str(), strategy);
      }
    }
  }
}

void sqrt_is_byte_identical_to_no_recompute(void**) { check_strategy_is_byte_identical("sqrt"); }

// Spilling checkpoints to host and prefetching them back changes no byte, with the copies placed
// for synchronous copies (tightest) and for asynchronous ones (waits and prefetches moved to
// hide them). Run with
// REMAT_TEST_DELAY_COPIES=1 (a second registration does, on OpenCL), the backend
// holds every copy back until the op that waits for it: a reader that did not wait would read
// stale bytes, and this comparison would fail.
void spilling_to_host_is_byte_identical_to_no_recompute(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const char* model = kModels[2];
  for (const char* optimizer : kOptimizers) {
    remat::compiler::CompileOptions o;
    o.model = model;
    o.batch = kBatch;
    o.optimizer = optimizer;
    o.seed = kSeed;
    o.strategy = "splits";
    const auto plain = remat::compiler::compile(o).report;
    const uint64_t budget = plain.persistent_bytes + plain.arena_bytes * 8 / 10;
    o.device_budget = budget;
    const auto spilled = remat::compiler::compile(o).report;
    if (spilled.spilled.size() < 2)
      fail_msg("only %zu spills at a budget of %llu", spilled.spilled.size(),
               static_cast<unsigned long long>(budget));
    const std::vector<uint8_t> reference = train(model, optimizer, "none", g_backend);
    for (const char* costs : {"cpu", "opencl"}) {
      const std::string strategy = "splits/device=" + std::to_string(budget) + "/costs=" + costs;
      if (reference != train(model, optimizer, strategy, g_backend)) {
        fail_msg("%s with %s on %s, copies placed for %s: %zu spills change the parameters", model,
                 optimizer, g_backend.c_str(), costs, spilled.spilled.size());
      }
    }
  }
}
void selective_is_byte_identical_to_no_recompute(void**) {
  check_strategy_is_byte_identical("selective");
}

void spill_prefetch_and_wait_round_trip_bytes(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  constexpr uint64_t kArena = 8192, kPersistent = 256, kHost = 4096, kBytes = 1024;
  alignas(64) static uint8_t arena[kArena], persistent[kPersistent], host[kHost];
  memset(host, 0, sizeof(host));
  remat::RegionSetup regions = regions_for(g_backend, arena, kArena, persistent, kPersistent, 64);
  regions.host = host;
  regions.host_bytes = kHost;
  char text[512] = "";
  remat::ErrorBuffer err{text, sizeof(text)};
  remat::Backend* backend = nullptr;
  if (remat::create_backend(g_backend.c_str(), regions, &backend, &err) != REMAT_OK)
    fail_msg("create: %s", text);
  std::vector<uint8_t> pattern(kBytes), zeros(kBytes, 0), back(kBytes, 0xEE);
  for (uint64_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<uint8_t>(i * 7 + 1);

  // arena[256..] -> host[512..] -> arena[4096..], with the source cleared in between.
  const remat::TensorRef x = bytes_tensor(remat::Region::kArena, 256, kBytes);
  const remat::TensorRef slot = bytes_tensor(remat::Region::kHost, 512, kBytes);
  const remat::TensorRef y = bytes_tensor(remat::Region::kArena, 4096, kBytes);
  const remat::StepContext ctx{kSeed, 0};
  assert_int_equal(backend->upload(remat::Region::kArena, x.offset, pattern.data(), kBytes, &err),
                   REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kSpill, 0, &x, &slot), ctx, &err),
                   REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kWait, 1, &x, nullptr), ctx, &err),
                   REMAT_OK);
  assert_int_equal(backend->upload(remat::Region::kArena, x.offset, zeros.data(), kBytes, &err),
                   REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kPrefetch, 2, &slot, &y), ctx, &err),
                   REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kWait, 3, &y, nullptr), ctx, &err),
                   REMAT_OK);
  assert_int_equal(backend->sync(&err), REMAT_OK);
  assert_int_equal(backend->download(remat::Region::kArena, y.offset, back.data(), kBytes, &err),
                   REMAT_OK);
  assert_memory_equal(back.data(), pattern.data(), kBytes);
  // The slot itself holds the bytes (the host region is the caller's memory).
  assert_memory_equal(host + slot.offset, pattern.data(), kBytes);
  assert_int_equal(backend->download(remat::Region::kArena, x.offset, back.data(), kBytes, &err),
                   REMAT_OK);
  assert_memory_equal(back.data(), zeros.data(), kBytes);

  // Many copies in flight without waits (more than any fixed table), then one sync.
  for (uint32_t i = 0; i < 200; ++i) {
    assert_int_equal(backend->run_op(make_call(remat::OpCode::kSpill, 4 + i, &y, &slot), ctx, &err),
                     REMAT_OK);
  }
  assert_int_equal(backend->sync(&err), REMAT_OK);
  assert_memory_equal(host + slot.offset, pattern.data(), kBytes);
  remat::destroy_backend(backend);
}

// upload() and download() refuse a copy that reaches past its region (REMAT_ERROR_OUT_OF_REGION,
// naming the copy and the region's size) and leave the region's bytes as they were: the runtime
// never asks for one, so a test that lays out more tensors than its arena holds fails here
// instead of writing past the backend's memory.
void a_copy_past_a_region_is_refused(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  constexpr uint64_t kArena = 4096, kPersistent = 256, kHost = 512;
  alignas(256) static uint8_t arena[kArena], persistent[kPersistent], host[kHost];
  remat::RegionSetup regions = regions_for(g_backend, arena, kArena, persistent, kPersistent, 256);
  regions.host = host;
  regions.host_bytes = kHost;
  remat_test::Errors e;
  remat::Backend* backend = nullptr;
  if (remat::create_backend(g_backend.c_str(), regions, &backend, &e.buf) != REMAT_OK)
    fail_msg("create: %s", e.text);
  uint8_t pattern[16], back[16];
  for (int i = 0; i < 16; ++i) pattern[i] = static_cast<uint8_t>(0xA0 + i);
  const struct {
    remat::Region region;
    uint64_t size;
  } regions_to_check[] = {{remat::Region::kArena, kArena},
                          {remat::Region::kPersistent, kPersistent},
                          {remat::Region::kHost, kHost}};
  for (const auto& r : regions_to_check) {
    const uint64_t last = r.size - 16;  // the region's last 16 bytes
    assert_int_equal(backend->upload(r.region, last, pattern, 16, &e.buf), REMAT_OK);
    const struct {
      uint64_t offset, bytes;
    } past[] = {{r.size - 8, 16}, {r.size, 1}, {0, r.size + 1}, {~uint64_t{0} - 4, 16}};
    for (const auto& p : past) {
      static uint8_t zeros[kArena + 1], sink[kArena + 1];
      // |what| refused with OUT_OF_REGION and a message naming it.
      const auto expect_refused = [&](const char* what, remat_status status) {
        if (status != REMAT_ERROR_OUT_OF_REGION || strstr(e.text, what) == nullptr)
          fail_msg(
              "%s of %llu bytes at %llu of region %d: status %d (%s), expected "
              "OUT_OF_REGION naming the %s",
              what, static_cast<unsigned long long>(p.bytes),
              static_cast<unsigned long long>(p.offset), static_cast<int>(r.region), status, e.text,
              what);
      };
      e.text[0] = '\0';
      expect_refused("upload", backend->upload(r.region, p.offset, zeros, p.bytes, &e.buf));
      e.text[0] = '\0';
      expect_refused("download", backend->download(r.region, p.offset, sink, p.bytes, &e.buf));
    }
    printf("  region %d: %s\n", static_cast<int>(r.region), e.text);
    assert_int_equal(backend->download(r.region, last, back, 16, &e.buf), REMAT_OK);
    assert_memory_equal(back, pattern, 16);
  }
  remat::destroy_backend(backend);
}

void an_unknown_device_is_unavailable_with_a_message(void**) {
  const std::vector<uint8_t> bytes = compile_plan(kModels[0], kOptimizers[0], "none");
  remat_plan* plan = nullptr;
  char message[512] = "";
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)),
                   REMAT_OK);
  const std::string spec = backend_name(g_backend) + ":9:9";
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = spec.c_str();
  remat_session* session = nullptr;
  message[0] = '\0';
  assert_int_equal(remat_session_create(plan, &options, &session, message, sizeof(message)),
                   REMAT_ERROR_UNAVAILABLE);
  printf("%s: %s\n", spec.c_str(), message);
  assert_null(session);
  assert_true(strlen(message) > 10);
  remat_plan_close(plan);
}

// A fresh session's whole saved state (parameters drawn from Philox, optimizer moments, counters,
// batch norms' statistics) equals the CPU backend's byte for byte, for every model: a device
// backend that draws initial values itself (Backend::draws_init) draws the host's bits.
void the_initial_state_is_the_cpu_backends_byte_for_byte(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const std::string model : kModels) {
    std::vector<uint8_t> on_cpu, here;
    {
      Run cpu(model, kOptimizers[1], "none", "cpu");
      if (remat_session_save_state(cpu.session, append_state, &on_cpu) != REMAT_OK)
        fail_msg("save_state on cpu: %s", remat_session_last_error(cpu.session));
    }
    {
      Run run(model, kOptimizers[1], "none", g_backend);
      if (remat_session_save_state(run.session, append_state, &here) != REMAT_OK)
        fail_msg("save_state: %s", remat_session_last_error(run.session));
    }
    if (here != on_cpu) {
      size_t at = 0;
      while (at < here.size() && at < on_cpu.size() && here[at] == on_cpu[at]) ++at;
      fail_msg("%s on %s: the initial state differs from the cpu's at byte %zu of %zu",
               model.c_str(), g_backend.c_str(), at, on_cpu.size());
    }
  }
}

// Steps |first|..|first + count - 1| of |model| on |run|.
void run_steps(Run& run, const std::string& model, int first, int count) {
  remat::io::SyntheticTask task(model, kBatch, kSeed);
  for (int s = first; s < first + count; ++s) {
    run.feed(task, static_cast<uint64_t>(s));
    if (remat_session_step(run.session, nullptr) != REMAT_OK) {
      fail_msg("%s step %d: %s", model.c_str(), s, remat_session_last_error(run.session));
    }
  }
}

// Two steps, save the state, load it into a fresh session, three more steps: the parameters and
// buffers equal five steps in one session on this backend, byte for byte, under SGD with
// momentum and AdamW, with dropout, with recomputation, on a transformer and a ResNet.
void resuming_from_a_saved_state_is_exact(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* optimizer : kOptimizers) {
    for (const char* strategy : {"none", "sqrt"}) {
      for (const std::string model : {kModels[2], kModels[3]}) {
        Run straight(model, optimizer, strategy, g_backend);
        run_steps(straight, model, 0, kSteps);
        std::vector<uint8_t> state;
        {
          Run first(model, optimizer, strategy, g_backend);
          run_steps(first, model, 0, 2);
          if (remat_session_save_state(first.session, append_state, &state) != REMAT_OK) {
            fail_msg("save_state: %s", remat_session_last_error(first.session));
          }
        }
        Run resumed(model, optimizer, strategy, g_backend);
        if (remat_session_load_state(resumed.session, read_state, &state, state.size()) !=
            REMAT_OK) {
          fail_msg("load_state: %s", remat_session_last_error(resumed.session));
        }
        run_steps(resumed, model, 2, kSteps - 2);
        if (resumed.params_and_buffers() != straight.params_and_buffers()) {
          fail_msg("%s %s %s on %s: 2 + %d resumed steps differ from %d", model.c_str(), optimizer,
                   strategy, g_backend.c_str(), kSteps - 2, kSteps);
        }
      }
    }
  }
}

// The op catalogue against the backend: every opcode but the copies between regions (tested
// above) and the all-reduce ops (which need ranks: tests/runtime/test_data_parallel.cc) has a
// case; the CPU backend claims every op; every op the backend claims has a kernel
// that runs its case within the tolerances of op_cases.h against the CPU kernels, and every op
// it does not claim answers UNIMPLEMENTED naming the op. (No container lives across a fail or
// skip here: both leave the function by longjmp, past any destructor.)
void every_op_is_claimed_and_matches_the_cpu_kernels_or_is_unimplemented(void**) {
  for (uint16_t code = 1; code < remat::kOpCodeCount; ++code) {
    const bool copy = code == static_cast<uint16_t>(remat::OpCode::kSpill) ||
                      code == static_cast<uint16_t>(remat::OpCode::kPrefetch) ||
                      code == static_cast<uint16_t>(remat::OpCode::kWait) ||
                      code == static_cast<uint16_t>(remat::OpCode::kAllreduceStart) ||
                      code == static_cast<uint16_t>(remat::OpCode::kAllreduceWait);
    bool covered = false;
    for (const remat_test::OpCase& c : remat_test::every_op_case())
      covered = covered || static_cast<uint16_t>(c.code) == code;
    if (!copy && !covered) fail_msg("op %s has no case in op_case_lists.cc", remat::op_name(code));
  }
  constexpr uint64_t kArena = 1 << 22, kPersistent = 4096;
  alignas(256) static uint8_t arena[kArena], persistent[kPersistent];
  remat::Backend* cpu = backend_over("cpu", arena, kArena, persistent, kPersistent);
  for (uint16_t code = 1; code < remat::kOpCodeCount; ++code) {
    if (!cpu->supports_op(code))
      fail_msg("the cpu backend does not claim op %s", remat::op_name(code));
  }
  if (backend_name(g_backend) == "cpu") {
    remat::destroy_backend(cpu);
    return;  // The CPU kernels are the reference: nothing to compare them with.
  }
  if (remat::find_device_profile(g_backend.c_str()) == nullptr)
    fail_msg("backend %s has no device profile", g_backend.c_str());
  // A device backend allocates its own regions; one that binds host memory shares the CPU's.
  remat::Backend* other = backend_over(g_backend, arena, kArena, persistent, kPersistent);
  for (const remat_test::OpCase& c : remat_test::every_op_case()) {
    if (other->supports_op(static_cast<uint16_t>(c.code))) {
      remat_test::run_case(c, cpu, other, g_backend.c_str());
    } else if (!remat_test::run_unclaimed_case(c, other, g_backend.c_str())) {
      fail_msg("%s: op %s is neither run nor refused as unimplemented", g_backend.c_str(), c.name);
    }
  }
  remat::destroy_backend(other);
  remat::destroy_backend(cpu);
}

// Losses of a 16-bit plan on the backend under test within this of the CPU's at the same
// precision, relatively (plus as much absolutely): the float32 kernels differ within the op
// cases' tolerances, and a difference can move a value across a 16-bit rounding boundary.
constexpr double kHalfLossTol = 1e-2;

// A transformer compiled at --precision bf16 and fp16 (compiler/precision.h: activations,
// checkpoints, spill slots and activation gradients in 16 bits) trains on the backend under
// test under every strategy, and spilling checkpoints to host, to the bytes of --strategy none
// at the same precision (parameters and buffers), and its losses over five steps are within
// kHalfLossTol of the CPU's.
void a_16_bit_transformer_trains_under_every_strategy_as_under_none(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  if (!profile_under_test().half_floats) {
    printf("%s runs float32 tensors only\n", g_backend.c_str());
    skip();
  }
  const std::string model = kModels[2];
  const std::string optimizer = kOptimizers[1];
  for (const std::string precision : {"bf16", "fp16"}) {
    const std::string p = "/precision=" + precision;
    const auto none = compile_report(model, optimizer, "none" + p);
    const auto sqrt = compile_report(model, optimizer, "sqrt" + p);
    const uint64_t arena = (none.arena_bytes + sqrt.arena_bytes) / 2;
    // 80 % of the arena beside the persistent region and the workspace, as the plan for the
    // CPU's costs and the plan for OpenCL's (its workspace holds its ops' scratch too) take them.
    uint64_t device = 0;
    for (const char* costs : {"/costs=cpu", "/costs=opencl"}) {
      const auto splits = compile_report(model, optimizer, "splits" + p + costs);
      device = std::max(
          device, splits.persistent_bytes + splits.workspace_bytes + splits.arena_bytes * 8 / 10);
    }
    const std::string spill = "splits/device=" + std::to_string(device);
    if (compile_report(model, optimizer, spill + p).spilled.empty())
      fail_msg("%s: nothing spilled at a device budget of %llu", precision.c_str(),
               static_cast<unsigned long long>(device));
    std::vector<float> losses, cpu_losses;
    const std::vector<uint8_t> reference =
        train(model, optimizer, "none" + p, g_backend, true, &losses);
    train(model, optimizer, "none" + p, "cpu", false, &cpu_losses);
    for (int s = 0; s < kSteps; ++s) {
      const double want = cpu_losses[static_cast<size_t>(s)];
      const double got = losses[static_cast<size_t>(s)];
      printf("%s step %d: loss %.7g on %s, %.7g on cpu\n", precision.c_str(), s, got,
             g_backend.c_str(), want);
      if (!(fabs(got - want) <= kHalfLossTol * (1 + fabs(want))))
        fail_msg("%s step %d: loss %g on %s, %g on cpu", precision.c_str(), s, got,
                 g_backend.c_str(), want);
    }
    const std::string manual =
        "manual:encoder.layer.0.attention.output.LayerNorm.out,encoder.layer.1.output.LayerNorm."
        "out";
    for (const std::string& strategy :
         {std::string("sqrt"), std::string("selective"), std::string("splits"), manual,
          "budget/arena=" + std::to_string(arena), "auto/arena=" + std::to_string(arena),
          spill + "/costs=cpu", spill + "/costs=opencl"}) {
      if (train(model, optimizer, strategy + p, g_backend, true) != reference) {
        fail_msg("%s at %s on %s: --strategy %s differs from --strategy none", model.c_str(),
                 precision.c_str(), g_backend.c_str(), strategy.c_str());
      }
      printf("%s %s: as none\n", precision.c_str(), strategy.c_str());
    }
  }
}

// A plan whose activations and gradients are 16-bit floats (parameter gradients too): a backend
// whose profile says it runs them (cpu, opencl, cuda) trains it (loss finite every step, the
// non-finite guard reading its 16-bit gradients); a backend whose profile says it runs float32
// tensors only would refuse the session, naming the op, the tensor and itself, and leak nothing
// on the way (the suites run under ASan in CI). No backend of this tree that claims every op
// refuses them any more.
void a_16_bit_plan_trains_where_the_profile_allows_and_is_refused_elsewhere(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const remat::DeviceProfile* profile = &profile_under_test();
  for (const char* model : {kModels[2], kModels[3]}) {
    for (remat_dtype dtype : {REMAT_DTYPE_BF16, REMAT_DTYPE_F16}) {
      const char* name = dtype == REMAT_DTYPE_BF16 ? "bf16" : "f16";
      const std::vector<uint8_t> bytes = compile_16_bit_plan(model, kOptimizers[1], "sqrt", dtype);
      remat_plan* plan = nullptr;
      char message[512] = "";
      if (remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)) != REMAT_OK)
        fail_msg("%s in %s: plan_open: %s", model, name, message);
      remat_session_options options;
      remat_session_options_init(&options);
      options.backend = g_backend.c_str();
      remat_session* session = nullptr;
      const remat_status status =
          remat_session_create(plan, &options, &session, message, sizeof(message));
      if (!profile->half_floats) {
        printf("%s: %s\n", g_backend.c_str(), message);
        remat_plan_close(plan);
        assert_int_equal(status, REMAT_ERROR_UNIMPLEMENTED);
        assert_null(session);
        const std::string backend = "backend '" + backend_name(g_backend) + "'";
        for (const char* part : {"op ", name, backend.c_str(), "--precision fp32"})
          if (strstr(message, part) == nullptr) fail_msg("'%s' lacks '%s'", message, part);
        continue;
      }
      if (status != REMAT_OK) fail_msg("%s in %s: session_create: %s", model, name, message);
      remat::io::SyntheticTask task(model, kBatch, kSeed);
      for (int step = 0; step < kSteps; ++step) {
        const auto values = task.batch(static_cast<uint64_t>(step));
        const auto names = task.names();
        for (size_t i = 0; i < names.size(); ++i) {
          assert_int_equal(remat_session_set_input(session, names[i].c_str(), values[i].data(),
                                                   values[i].size()),
                           REMAT_OK);
        }
        float loss = NAN;
        const remat_status s = remat_session_step(session, &loss);
        if (s != REMAT_OK || !isfinite(loss)) {
          fail_msg("%s in %s, step %d: loss %g, %s", model, name, step, static_cast<double>(loss),
                   remat_session_last_error(session));
        }
      }
      printf("  %s in %s: %d steps\n", model, name, kSteps);
      remat_session_destroy(session);
      remat_plan_close(plan);
    }
  }
}

remat_status one_rank_start(void*, uint32_t, const remat_buffer*, uint32_t) { return REMAT_OK; }
remat_status one_rank_wait(void*, uint32_t) { return REMAT_OK; }

// A backend that lacks a kernel for an op of a plan refuses the session, naming op and backend:
// a data-parallel plan (with a communicator of one rank) on the null backend, which lacks every
// op; the others claim every op and skip.
void a_plan_with_an_unclaimed_op_is_refused_at_session_creation(void**) {
  if (claims_every_op()) {
    printf("%s claims every op: nothing to refuse\n", g_backend.c_str());
    skip();
  }
  const std::vector<uint8_t> bytes =
      compile_plan(kModels[0], kOptimizers[0], "none", /*data_parallel=*/true);
  static const remat_communicator one_rank{
      sizeof(remat_communicator), 0, 1, nullptr, one_rank_start, one_rank_wait,
      REMAT_MEMORY_HOST,          0};
  remat_plan* plan = nullptr;
  char message[512] = "";
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)),
                   REMAT_OK);
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = g_backend.c_str();
  options.communicator = &one_rank;
  remat_session* session = nullptr;
  const remat_status status =
      remat_session_create(plan, &options, &session, message, sizeof(message));
  printf("%s: %s\n", g_backend.c_str(), message);
  remat_plan_close(plan);
  assert_int_equal(status, REMAT_ERROR_UNIMPLEMENTED);
  assert_null(session);
  assert_non_null(strstr(message, "not implemented by the"));
  assert_non_null(strstr(message, backend_name(g_backend).c_str()));
}

}  // namespace
}  // namespace conformance

int main(int argc, char** argv) {
  using namespace conformance;
  const char* env = getenv("REMAT_TEST_BACKEND");
  if (argc > 1) {
    g_backend = argv[1];
  } else if (env != nullptr && env[0] != '\0') {
    g_backend = env;
  }
  // PoCL fails device lookup when its cache folder cannot be created; make it if named.
  const char* pocl_cache = getenv("POCL_CACHE_DIR");
  if (pocl_cache != nullptr) mkdir(pocl_cache, 0700);
  if (!backend_available()) return 77;
  if (argc > 2) cmocka_set_test_filter(argv[2]);  // run only the tests matching this name
  printf("backend conformance: %s\n", g_backend.c_str());
  std::vector<CMUnitTest> tests = {
      cmocka_unit_test(parameters_after_five_steps_match_the_cpu_backend),
      cmocka_unit_test(sqrt_is_byte_identical_to_no_recompute),
      cmocka_unit_test(selective_is_byte_identical_to_no_recompute),
      cmocka_unit_test(spilling_to_host_is_byte_identical_to_no_recompute),
      cmocka_unit_test(spill_prefetch_and_wait_round_trip_bytes),
      cmocka_unit_test(the_initial_state_is_the_cpu_backends_byte_for_byte),
      cmocka_unit_test(resuming_from_a_saved_state_is_exact),
      cmocka_unit_test(an_unknown_device_is_unavailable_with_a_message),
      cmocka_unit_test(a_copy_past_a_region_is_refused),
      cmocka_unit_test(every_op_is_claimed_and_matches_the_cpu_kernels_or_is_unimplemented),
      cmocka_unit_test(a_plan_with_an_unclaimed_op_is_refused_at_session_creation),
      cmocka_unit_test(a_16_bit_transformer_trains_under_every_strategy_as_under_none),
      cmocka_unit_test(a_16_bit_plan_trains_where_the_profile_allows_and_is_refused_elsewhere),
  };
  tests.insert(tests.end(), kWideningTests, kWideningTests + kWideningTestCount);
  tests.insert(tests.end(), kWorkspaceTests, kWorkspaceTests + kWorkspaceTestCount);
  tests.insert(tests.end(), kStepCheckTests, kStepCheckTests + kStepCheckTestCount);
  tests.insert(tests.end(), kEvalTests, kEvalTests + kEvalTestCount);
  tests.insert(tests.end(), kGpuHalfTests, kGpuHalfTests + kGpuHalfTestCount);
  tests.insert(tests.end(), kHalfAsIsTests, kHalfAsIsTests + kHalfAsIsTestCount);
  tests.insert(tests.end(), kBatchChunkTests, kBatchChunkTests + kBatchChunkTestCount);
  tests.insert(tests.end(), kGpuConvTests, kGpuConvTests + kGpuConvTestCount);
  return _cmocka_run_group_tests("backend conformance", tests.data(), tests.size(), nullptr,
                                 nullptr);
}
