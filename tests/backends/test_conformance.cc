// Backend conformance: the same checks against any backend, named by argv[1] or by the
// REMAT_TEST_BACKEND environment variable ("cpu", "opencl", "opencl:0:0", ...).
//
// Tolerances against the CPU backend (docs/backends.md): after five steps every parameter
// satisfies |p - p_cpu| <= kAbsTol + kRelTol * |p_cpu| under SGD; under AdamW 99% do and all
// are within 2 * lr * steps (see kAdamOutsideShare). Recompute on one backend is exact.
#include "tests/cmocka_cpp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "cli/synthetic_task.h"
#include "compiler/compiler.h"
#include "remat/remat.h"
#include "backends/device_profiles.h"
#include "runtime/backend_registry.h"
#include "tests/backends/op_cases.h"

namespace {

constexpr double kAbsTol = 1e-4;
constexpr double kRelTol = 1e-3;
constexpr int kSteps = 5;
// Adam divides by sqrt(v): a parameter whose gradient is rounding noise (e.g. attention key
// biases, whose exact gradient is 0) moves by about lr per step in a direction the noise
// picks, on any two backends alike. So under AdamW at most 1 in kAdamOutsideShare parameters
// may leave the tolerance above, and none may differ by more than 2 * lr * steps.
constexpr size_t kAdamOutsideShare = 100;
constexpr double kAdamBound = 2 * 0.01 * kSteps;
constexpr int64_t kBatch = 8;
constexpr uint64_t kSeed = 3;

std::string g_backend = "cpu";

const char* const kModels[] = {
    "mlp:layers=4,width=32,in=16,classes=4,dropout=0.2",
    "resmlp:layers=4,width=32,in=16,classes=4,dropout=0.2",
    "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3,dropout=0.1",
};
const char* const kOptimizers[] = {
    "sgd:lr=0.05,momentum=0.9",
    "adamw:lr=0.01,weight_decay=0.01",
};

// The part of a backend spec before the first ':' ("opencl:0:0" -> "opencl").
std::string backend_name(const std::string& spec) { return spec.substr(0, spec.find(':')); }

// Whether the backend under test has a kernel for every op of the catalogue (the null
// skeleton has none); the checks that train need every op and are skipped otherwise.
bool claims_every_op() {
  alignas(256) static uint8_t arena[4096], persistent[4096];
  remat::RegionSetup regions{};
  regions.arena = arena;
  regions.arena_bytes = sizeof(arena);
  regions.persistent = persistent;
  regions.persistent_bytes = sizeof(persistent);
  regions.alignment = 256;
  remat_test::Errors e;
  remat::Backend* backend = nullptr;
  if (remat::create_backend(g_backend.c_str(), regions, &backend, &e.buf) != REMAT_OK) return true;
  bool all = true;
  for (uint16_t code = 1; code < remat::kOpCodeCount; ++code) all = all && backend->supports_op(code);
  remat::destroy_backend(backend);
  return all;
}

// Skips the calling test (cmocka's skip) on a backend that lacks kernels; call it first, before
// any container is alive (skip longjmps past destructors).
#define SKIP_UNLESS_EVERY_OP_IS_CLAIMED()                                                 \
  do {                                                                                    \
    if (!claims_every_op()) {                                                             \
      printf("%s lacks kernels: training checks do not apply\n", g_backend.c_str());      \
      skip();                                                                             \
    }                                                                                     \
  } while (0)

// A strategy may carry a device budget as "STRATEGY/device=BYTES" (spilling to host), placed
// by the spill cost model of the backend under test, or of the one named by "/costs=NAME";
// "/checks=atomic|off" sets the non-finite guard (default on).
std::vector<uint8_t> compile_plan(const std::string& model, const std::string& optimizer,
                                  const std::string& strategy) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = kBatch;
  o.optimizer = optimizer;
  o.seed = kSeed;
  o.strategy = strategy.substr(0, strategy.find('/'));
  if (strategy.find("/device=") != std::string::npos) {
    o.device_budget = std::stoull(strategy.substr(strategy.find("/device=") + 8));
  }
  const size_t costs_at = strategy.find("/costs=");
  o.target(remat::compiler::target_profile(
      costs_at == std::string::npos ? backend_name(g_backend) : strategy.substr(costs_at + 7, strategy.find('/', costs_at + 1) - costs_at - 7)));
  const size_t checks_at = strategy.find("/checks=");
  if (checks_at != std::string::npos &&
      !remat::compiler::parse_finite_checks(strategy.substr(checks_at + 8), &o.finite_checks)) {
    fail_msg("bad checks in '%s'", strategy.c_str());
  }
  return remat::compiler::compile(o).plan;
}

// A plan open in a session on one backend; fails the test on any error.
struct Run {
  std::vector<uint8_t> bytes;
  remat_plan* plan = nullptr;
  remat_session* session = nullptr;

  Run(const std::string& model, const std::string& optimizer, const std::string& strategy,
      const std::string& backend) {
    bytes = compile_plan(model, optimizer, strategy);
    char message[512];
    if (remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)) != REMAT_OK) {
      fail_msg("plan_open: %s", message);
    }
    remat_session_options options;
    remat_session_options_init(&options);
    options.backend = backend.c_str();
    if (remat_session_create(plan, &options, &session, message, sizeof(message)) != REMAT_OK) {
      fail_msg("session_create on %s: %s", backend.c_str(), message);
    }
  }
  ~Run() {
    remat_session_destroy(session);
    remat_plan_close(plan);
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  void feed(const remat::cli::SyntheticTask& task, uint64_t step) {
    const auto values = task.batch(step);
    const auto names = task.names();
    for (size_t i = 0; i < names.size(); ++i) {
      if (remat_session_set_input(session, names[i].c_str(), values[i].data(), values[i].size()) != REMAT_OK) {
        fail_msg("set_input %s: %s", names[i].c_str(), remat_session_last_error(session));
      }
    }
  }

  std::vector<uint8_t> params() const {
    std::vector<uint8_t> all;
    uint32_t count = 0;
    remat_plan_binding_count(plan, REMAT_BINDING_PARAM, &count);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      remat_plan_binding(plan, REMAT_BINDING_PARAM, i, &info);
      std::vector<uint8_t> one(info.bytes);
      if (remat_session_read_param(session, info.name, one.data(), one.size()) != REMAT_OK) {
        fail_msg("read_param %s: %s", info.name, remat_session_last_error(session));
      }
      all.insert(all.end(), one.begin(), one.end());
    }
    return all;
  }
};

// Parameters after kSteps steps of |model| with |optimizer| under |strategy| on |backend|.
std::vector<uint8_t> train(const std::string& model, const std::string& optimizer, const std::string& strategy,
                           const std::string& backend) {
  Run run(model, optimizer, strategy, backend);
  remat::cli::SyntheticTask task(model, kBatch, kSeed);
  for (int s = 0; s < kSteps; ++s) {
    run.feed(task, static_cast<uint64_t>(s));
    float loss = 0;
    if (remat_session_step(run.session, &loss) != REMAT_OK) {
      fail_msg("%s on %s, step %d: %s", model.c_str(), backend.c_str(), s, remat_session_last_error(run.session));
    }
    if (!isfinite(loss)) fail_msg("%s on %s, step %d: loss %g", model.c_str(), backend.c_str(), s, loss);
  }
  return run.params();
}

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
      printf("%s, %s: %zu/%zu parameters bit-identical to cpu, %zu outside abs %g + rel %g; largest diff %.3g "
             "(cpu %.9g, %s %.9g)\n",
             model, optimizer, identical, n, outside, kAbsTol, kRelTol, worst, static_cast<double>(a[worst_at]),
             g_backend.c_str(), static_cast<double>(b[worst_at]));
      const bool adam = o == 1;
      if (!adam && outside > 0) fail_msg("%s with %s: %zu parameters beyond tolerance", model, optimizer, outside);
      if (adam && (outside * kAdamOutsideShare > n || !(worst <= kAdamBound))) {
        fail_msg("%s with %s: %zu parameters beyond tolerance, largest diff %g", model, optimizer, outside, worst);
      }
    }
  }
}

void check_strategy_is_byte_identical(const char* strategy) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* model : kModels) {
    for (const char* optimizer : kOptimizers) {
      if (train(model, optimizer, "none", g_backend) != train(model, optimizer, strategy, g_backend)) {
        fail_msg("%s with %s on %s: --strategy %s differs from --strategy none", model, optimizer, g_backend.c_str(),
                 strategy);
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
    if (spilled.spilled.size() < 2) fail_msg("only %zu spills at a budget of %llu", spilled.spilled.size(),
                                             static_cast<unsigned long long>(budget));
    const std::vector<uint8_t> reference = train(model, optimizer, "none", g_backend);
    for (const char* costs : {"cpu", "opencl"}) {
      const std::string strategy = "splits/device=" + std::to_string(budget) + "/costs=" + costs;
      if (reference != train(model, optimizer, strategy, g_backend)) {
        fail_msg("%s with %s on %s, copies placed for %s: %zu spills change the parameters", model, optimizer,
                 g_backend.c_str(), costs, spilled.spilled.size());
      }
    }
  }
}
void selective_is_byte_identical_to_no_recompute(void**) { check_strategy_is_byte_identical("selective"); }

// Sets every binding from step 0 of the task, then overwrites |name|'s int32 element |at|.
void feed_with_bad_value(Run& run, const std::string& model, const char* name, int32_t value) {
  remat::cli::SyntheticTask task(model, kBatch, kSeed);
  const auto names = task.names();
  auto values = task.batch(0);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) memcpy(values[i].data() + 4 * 3, &value, sizeof(value));
    assert_int_equal(remat_session_set_input(run.session, names[i].c_str(), values[i].data(), values[i].size()),
                     REMAT_OK);
  }
}

void a_label_out_of_range_is_a_step_error(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (int32_t bad : {4, -1}) {
    Run run(kModels[0], kOptimizers[0], "none", g_backend);
    feed_with_bad_value(run, kModels[0], "labels", bad);
    assert_int_equal(remat_session_step(run.session, nullptr), REMAT_ERROR_OUT_OF_RANGE);
    const char* message = remat_session_last_error(run.session);
    printf("label %d: %s\n", bad, message);
    assert_non_null(strstr(message, "label"));
    assert_non_null(strstr(message, "position 3"));
  }
}

void a_token_id_out_of_range_is_a_step_error(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  Run run(kModels[2], kOptimizers[1], "none", g_backend);
  feed_with_bad_value(run, kModels[2], "tokens", 40);
  assert_int_equal(remat_session_step(run.session, nullptr), REMAT_ERROR_OUT_OF_RANGE);
  const char* message = remat_session_last_error(run.session);
  printf("token 40: %s\n", message);
  assert_non_null(strstr(message, "id 40"));
}

// Builds the OpCall of a one-input op over |in| and |out| (out may be null).
remat::OpCall make_call(remat::OpCode code, uint32_t index, const remat::TensorRef* in, const remat::TensorRef* out) {
  remat::OpCall call{};
  call.code = static_cast<uint16_t>(code);
  call.index = index;
  call.num_inputs = 1;
  call.inputs[0] = in;
  call.num_outputs = out != nullptr ? 1 : 0;
  call.outputs[0] = out;
  return call;
}

remat::TensorRef bytes_tensor(remat::Region region, uint64_t offset, uint64_t bytes) {
  remat::TensorRef t{};
  t.region = region;
  t.dtype = REMAT_DTYPE_F32;
  t.rank = 1;
  t.offset = offset;
  t.bytes = bytes;
  t.numel = static_cast<int64_t>(bytes / 4);
  t.dims[0] = t.numel;
  return t;
}

void spill_prefetch_and_wait_round_trip_bytes(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  constexpr uint64_t kArena = 8192, kPersistent = 256, kHost = 4096, kBytes = 1024;
  alignas(64) static uint8_t arena[kArena], persistent[kPersistent], host[kHost];
  memset(host, 0, sizeof(host));
  remat::RegionSetup regions{};
  // Only the CPU backend works in host regions; device backends allocate their own.
  const bool on_host = backend_name(g_backend) == "cpu";
  regions.arena = on_host ? arena : nullptr;
  regions.arena_bytes = kArena;
  regions.persistent = on_host ? persistent : nullptr;
  regions.persistent_bytes = kPersistent;
  regions.host = host;
  regions.host_bytes = kHost;
  regions.alignment = 64;
  char text[512] = "";
  remat::ErrorBuffer err{text, sizeof(text)};
  remat::Backend* backend = nullptr;
  if (remat::create_backend(g_backend.c_str(), regions, &backend, &err) != REMAT_OK) fail_msg("create: %s", text);
  std::vector<uint8_t> pattern(kBytes), zeros(kBytes, 0), back(kBytes, 0xEE);
  for (uint64_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<uint8_t>(i * 7 + 1);

  // arena[256..] -> host[512..] -> arena[4096..], with the source cleared in between.
  const remat::TensorRef x = bytes_tensor(remat::Region::kArena, 256, kBytes);
  const remat::TensorRef slot = bytes_tensor(remat::Region::kHost, 512, kBytes);
  const remat::TensorRef y = bytes_tensor(remat::Region::kArena, 4096, kBytes);
  const remat::StepContext ctx{kSeed, 0};
  assert_int_equal(backend->upload(remat::Region::kArena, x.offset, pattern.data(), kBytes, &err), REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kSpill, 0, &x, &slot), ctx, &err), REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kWait, 1, &x, nullptr), ctx, &err), REMAT_OK);
  assert_int_equal(backend->upload(remat::Region::kArena, x.offset, zeros.data(), kBytes, &err), REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kPrefetch, 2, &slot, &y), ctx, &err), REMAT_OK);
  assert_int_equal(backend->run_op(make_call(remat::OpCode::kWait, 3, &y, nullptr), ctx, &err), REMAT_OK);
  assert_int_equal(backend->sync(&err), REMAT_OK);
  assert_int_equal(backend->download(remat::Region::kArena, y.offset, back.data(), kBytes, &err), REMAT_OK);
  assert_memory_equal(back.data(), pattern.data(), kBytes);
  // The slot itself holds the bytes (the host region is the caller's memory).
  assert_memory_equal(host + slot.offset, pattern.data(), kBytes);
  assert_int_equal(backend->download(remat::Region::kArena, x.offset, back.data(), kBytes, &err), REMAT_OK);
  assert_memory_equal(back.data(), zeros.data(), kBytes);

  // Many copies in flight without waits (more than any fixed table), then one sync.
  for (uint32_t i = 0; i < 200; ++i) {
    assert_int_equal(backend->run_op(make_call(remat::OpCode::kSpill, 4 + i, &y, &slot), ctx, &err), REMAT_OK);
  }
  assert_int_equal(backend->sync(&err), REMAT_OK);
  assert_memory_equal(host + slot.offset, pattern.data(), kBytes);
  remat::destroy_backend(backend);
}

void an_unknown_device_is_unavailable_with_a_message(void**) {
  const std::vector<uint8_t> bytes = compile_plan(kModels[0], kOptimizers[0], "none");
  remat_plan* plan = nullptr;
  char message[512] = "";
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)), REMAT_OK);
  const std::string spec = backend_name(g_backend) + ":9:9";
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = spec.c_str();
  remat_session* session = nullptr;
  message[0] = '\0';
  assert_int_equal(remat_session_create(plan, &options, &session, message, sizeof(message)), REMAT_ERROR_UNAVAILABLE);
  printf("%s: %s\n", spec.c_str(), message);
  assert_null(session);
  assert_true(strlen(message) > 10);
  remat_plan_close(plan);
}

int append_state(void* context, const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  static_cast<std::vector<uint8_t>*>(context)->insert(static_cast<std::vector<uint8_t>*>(context)->end(), p,
                                                      p + bytes);
  return 0;
}
int read_state(void* context, uint64_t offset, void* data, size_t bytes) {
  const std::vector<uint8_t>& state = *static_cast<const std::vector<uint8_t>*>(context);
  if (offset > state.size() || bytes > state.size() - offset) return 1;
  memcpy(data, state.data() + offset, bytes);
  return 0;
}

// Steps |first|..|first + count - 1| of |model| on |run|.
void run_steps(Run& run, const std::string& model, int first, int count) {
  remat::cli::SyntheticTask task(model, kBatch, kSeed);
  for (int s = first; s < first + count; ++s) {
    run.feed(task, static_cast<uint64_t>(s));
    if (remat_session_step(run.session, nullptr) != REMAT_OK) {
      fail_msg("%s step %d: %s", model.c_str(), s, remat_session_last_error(run.session));
    }
  }
}

// Two steps, save the state, load it into a fresh session, three more steps: the parameters
// equal five steps in one session on this backend, byte for byte, under SGD with momentum and
// AdamW, with dropout, with recomputation and with spilling.
void resuming_from_a_saved_state_is_exact(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  for (const char* optimizer : kOptimizers) {
    for (const char* strategy : {"none", "sqrt"}) {
      const std::string model = kModels[2];
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
      if (remat_session_load_state(resumed.session, read_state, &state, state.size()) != REMAT_OK) {
        fail_msg("load_state: %s", remat_session_last_error(resumed.session));
      }
      run_steps(resumed, model, 2, kSteps - 2);
      if (resumed.params() != straight.params()) {
        fail_msg("%s %s on %s: 2 + %d resumed steps differ from %d", optimizer, strategy, g_backend.c_str(),
                 kSteps - 2, kSteps);
      }
    }
  }
}

// finite_check on data with NaN and infinities: the backend stops (or reports at sync) with
// REMAT_ERROR_NONFINITE for the smallest bad position, worded and placed as on the CPU.
void finite_check_reports_the_first_nonfinite_element_as_the_cpu_does(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  constexpr uint64_t kArena = 8192, kPersistent = 256;
  alignas(256) static uint8_t arena[2][kArena], persistent[2][kPersistent];
  std::vector<float> data(1000, 0.5f);
  data[900] = INFINITY;
  data[400] = -INFINITY;
  data[17] = NAN;
  const remat::TensorRef x = bytes_tensor(remat::Region::kArena, 256, data.size() * 4);
  const remat::OpCall call = make_call(remat::OpCode::kFiniteCheck, 12, &x, nullptr);
  std::string messages[2];
  for (int b = 0; b < 2; ++b) {
    const std::string backend = b == 0 ? "cpu" : g_backend;
    const remat::DeviceProfile* profile = remat::find_device_profile(backend.c_str());
    remat::RegionSetup regions{};
    regions.arena = profile->binds_host_memory ? arena[b] : nullptr;
    regions.arena_bytes = kArena;
    regions.persistent = profile->binds_host_memory ? persistent[b] : nullptr;
    regions.persistent_bytes = kPersistent;
    regions.alignment = 256;
    char text[512] = "";
    remat::ErrorBuffer err{text, sizeof(text)};
    remat::Backend* backend_object = nullptr;
    if (remat::create_backend(backend.c_str(), regions, &backend_object, &err) != REMAT_OK) fail_msg("create: %s", text);
    remat_status status = backend_object->upload(x.region, x.offset, data.data(), x.bytes, &err);
    if (status == REMAT_OK) status = backend_object->run_op(call, remat::StepContext{kSeed, 0}, &err);
    const remat_status synced = backend_object->sync(&err);
    if (status == REMAT_OK) status = synced;
    // Clean data after the report: the report was cleared, nothing sticks to the next op.
    const std::vector<float> clean(1000, 1.0f);
    backend_object->upload(x.region, x.offset, clean.data(), x.bytes, &err);
    remat::ErrorBuffer after_err{text + 256, 256};
    remat_status after = backend_object->run_op(call, remat::StepContext{kSeed, 1}, &after_err);
    if (after == REMAT_OK) after = backend_object->sync(&after_err);
    const uint32_t failed_op = err.failed_op;
    remat::destroy_backend(backend_object);
    printf("%s: %s\n", backend.c_str(), text);
    assert_int_equal(status, REMAT_ERROR_NONFINITE);
    assert_int_equal(failed_op, 13);
    assert_int_equal(after, REMAT_OK);
    messages[b] = text;
  }
  assert_non_null(strstr(messages[0].c_str(), "element 17 is nan"));
  assert_string_equal(messages[0].c_str(), messages[1].c_str());
}

// The state's tensors, without its header (which holds the step count) and checksum.
std::vector<uint8_t> state_tensors(remat_session* session) {
  std::vector<uint8_t> state;
  if (remat_session_save_state(session, append_state, &state) != REMAT_OK) {
    fail_msg("save_state: %s", remat_session_last_error(session));
  }
  return std::vector<uint8_t>(state.begin() + 48, state.end() - 4);
}

// A NaN in the input data reaches the loss (relu keeps NaN, as torch's does): the step says
// so naming the loss, no parameter or optimizer state changes, the step count moves on, and
// the next step with good data trains.
void a_nan_in_the_data_skips_the_update_and_names_the_loss(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const std::string model = "mlp:layers=2,width=8,in=4,classes=3";
  Run run(model, kOptimizers[1], "none", g_backend);
  remat::cli::SyntheticTask task(model, kBatch, kSeed);
  run.feed(task, 0);
  assert_int_equal(remat_session_step(run.session, nullptr), REMAT_OK);
  const std::vector<uint8_t> before = state_tensors(run.session);
  auto values = task.batch(1);
  const float nan = NAN;
  memcpy(values[0].data() + 4 * 5, &nan, sizeof(nan));
  assert_string_equal(task.names()[0].c_str(), "x");
  for (size_t i = 0; i < values.size(); ++i) {
    remat_session_set_input(run.session, task.names()[i].c_str(), values[i].data(), values[i].size());
  }
  float loss = 0.0f;
  assert_int_equal(remat_session_step(run.session, &loss), REMAT_ERROR_NONFINITE);
  const char* message = remat_session_last_error(run.session);
  printf("%s: %s\n", g_backend.c_str(), message);
  assert_true(isnan(loss));
  assert_non_null(strstr(message, "step 1: tensor 'loss' is not finite: element 0 is nan"));
  assert_non_null(strstr(message, "no parameter was updated"));
  assert_int_equal(remat_session_step_count(run.session), 2);
  assert_true(state_tensors(run.session) == before);
  run.feed(task, 2);
  assert_int_equal(remat_session_step(run.session, &loss), REMAT_OK);
  assert_true(isfinite(loss));
  assert_true(state_tensors(run.session) != before);
}

// A finite loss whose gradient overflows: the head's weights (+-3e38) and a hidden layer of
// constant 0.01 give logits near +-2.4e37, and the hidden layer's bias gradient 8 x 7.5e37 =
// inf. With checks on, the step stops before that gradient's update: the head (whose
// gradients are finished first, and finite) is updated, the rest is not; with atomic checks
// nothing is.
void a_nonfinite_gradient_stops_the_updates_from_its_own_on(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const std::string model = "mlp:layers=2,width=8,in=4,classes=2";
  for (const char* checks : {"on", "atomic"}) {
    Run run(model, kOptimizers[0], std::string("none/checks=") + checks, g_backend);
    const std::vector<float> zero(64, 0.0f), hundredth(8, 0.01f), head_bias(2, 0.0f);
    std::vector<float> head(16, 3e38f);
    for (size_t j = 8; j < 16; ++j) head[j] = -3e38f;
    remat_session_write_param(run.session, "fc1.weight", zero.data(), 64 * 4);
    remat_session_write_param(run.session, "fc1.bias", hundredth.data(), 8 * 4);
    remat_session_write_param(run.session, "fc2.weight", head.data(), 16 * 4);
    remat_session_write_param(run.session, "fc2.bias", head_bias.data(), 2 * 4);
    remat::cli::SyntheticTask task(model, kBatch, kSeed);
    run.feed(task, 0);
    const std::vector<int32_t> ones(kBatch, 1);
    remat_session_set_input(run.session, "labels", ones.data(), ones.size() * 4);
    std::vector<float> fc0_before(32), fc1_before(8), head_bias_after(2), fc0_after(32), fc1_after(8);
    remat_session_read_param(run.session, "fc0.weight", fc0_before.data(), 32 * 4);
    float loss = 0.0f;
    assert_int_equal(remat_session_step(run.session, &loss), REMAT_ERROR_NONFINITE);
    const char* message = remat_session_last_error(run.session);
    printf("%s, checks %s: loss %g: %s\n", g_backend.c_str(), checks, static_cast<double>(loss), message);
    assert_true(isfinite(loss));
    assert_non_null(strstr(message, "tensor 'grad.fc1."));
    remat_session_read_param(run.session, "fc2.bias", head_bias_after.data(), 2 * 4);
    remat_session_read_param(run.session, "fc1.bias", fc1_after.data(), 8 * 4);
    remat_session_read_param(run.session, "fc0.weight", fc0_after.data(), 32 * 4);
    assert_true(fc1_after == hundredth);
    assert_true(fc0_after == fc0_before);
    const bool head_updated = head_bias_after != head_bias;
    assert_int_equal(head_updated, strcmp(checks, "on") == 0);
    assert_non_null(strstr(message, head_updated ? "2 parameters had been updated" : "no parameter was updated"));
  }
}

// A learning rate set between steps equals the same rate compiled into the plan, byte for byte;
// bad rates are refused and change nothing.
void a_learning_rate_set_at_run_time_equals_the_compiled_one(void**) {
  SKIP_UNLESS_EVERY_OP_IS_CLAIMED();
  const std::string model = kModels[0];
  remat::cli::SyntheticTask task(model, kBatch, kSeed);
  for (const char* kind : {"sgd:lr=%g,momentum=0.9", "adamw:lr=%g,weight_decay=0.01"}) {
    const float rate = 0.02f;
    char compiled[64];
    snprintf(compiled, sizeof(compiled), kind, static_cast<double>(rate));
    std::vector<uint8_t> want;
    {
      Run reference(model, compiled, "none", g_backend);
      for (int s = 0; s < 3; ++s) {
        reference.feed(task, static_cast<uint64_t>(s));
        assert_int_equal(remat_session_step(reference.session, nullptr), REMAT_OK);
      }
      want = reference.params();
    }
    char optimizer[64];
    snprintf(optimizer, sizeof(optimizer), kind, 0.5);
    Run run(model, optimizer, "none", g_backend);
    float lr = 0.0f;
    assert_int_equal(remat_session_learning_rate(run.session, &lr), REMAT_OK);
    assert_true(lr == 0.5f);
    for (float bad : {-0.1f, NAN, INFINITY}) {
      assert_int_equal(remat_session_set_learning_rate(run.session, bad), REMAT_ERROR_INVALID_ARGUMENT);
      assert_non_null(strstr(remat_session_last_error(run.session), "set_learning_rate"));
    }
    assert_int_equal(remat_session_learning_rate(run.session, &lr), REMAT_OK);
    assert_true(lr == 0.5f);
    for (int s = 0; s < 3; ++s) {
      assert_int_equal(remat_session_set_learning_rate(run.session, rate), REMAT_OK);
      run.feed(task, static_cast<uint64_t>(s));
      assert_int_equal(remat_session_step(run.session, nullptr), REMAT_OK);
    }
    assert_int_equal(remat_session_learning_rate(run.session, &lr), REMAT_OK);
    assert_true(lr == rate);
    if (run.params() != want) fail_msg("%s on %s: run-time rates differ from compiled ones", kind, g_backend.c_str());
  }
  assert_int_equal(remat_session_set_learning_rate(nullptr, 0.1f), REMAT_ERROR_INVALID_ARGUMENT);
  float lr = 0.0f;
  assert_int_equal(remat_session_learning_rate(nullptr, &lr), REMAT_ERROR_INVALID_ARGUMENT);
}

// The op catalogue against the backend: every opcode but the copies between regions (tested
// above) has a case; the CPU backend claims every op; every op the backend claims has a kernel
// that runs its case within the tolerances of op_cases.h against the CPU kernels, and every op
// it does not claim answers UNIMPLEMENTED naming the op. (No container lives across a fail or
// skip here: both leave the function by longjmp, past any destructor.)
void every_op_is_claimed_and_matches_the_cpu_kernels_or_is_unimplemented(void**) {
  for (uint16_t code = 1; code < remat::kOpCodeCount; ++code) {
    const bool copy = code == static_cast<uint16_t>(remat::OpCode::kSpill) ||
                      code == static_cast<uint16_t>(remat::OpCode::kPrefetch) ||
                      code == static_cast<uint16_t>(remat::OpCode::kWait);
    bool covered = false;
    for (const remat_test::OpCase& c : remat_test::every_op_case()) covered = covered || static_cast<uint16_t>(c.code) == code;
    if (!copy && !covered) fail_msg("op %s has no case in op_cases.cc", remat::op_name(code));
  }
  constexpr uint64_t kArena = 1 << 22, kPersistent = 4096;
  alignas(256) static uint8_t arena[kArena], persistent[kPersistent];
  remat::RegionSetup regions{};
  regions.arena = arena;
  regions.arena_bytes = kArena;
  regions.persistent = persistent;
  regions.persistent_bytes = kPersistent;
  regions.alignment = 256;
  remat_test::Errors e;
  remat::Backend* cpu = nullptr;
  if (remat::create_backend("cpu", regions, &cpu, &e.buf) != REMAT_OK) fail_msg("create cpu: %s", e.text);
  for (uint16_t code = 1; code < remat::kOpCodeCount; ++code) {
    if (!cpu->supports_op(code)) fail_msg("the cpu backend does not claim op %s", remat::op_name(code));
  }
  if (backend_name(g_backend) == "cpu") {
    remat::destroy_backend(cpu);
    return;  // The CPU kernels are the reference: nothing to compare them with.
  }
  const remat::DeviceProfile* profile = remat::find_device_profile(g_backend.c_str());
  if (profile == nullptr) fail_msg("backend %s has no device profile", g_backend.c_str());
  if (!profile->binds_host_memory) {
    regions.arena = nullptr;  // Device backends allocate their own regions.
    regions.persistent = nullptr;
  }
  remat::Backend* other = nullptr;
  if (remat::create_backend(g_backend.c_str(), regions, &other, &e.buf) != REMAT_OK) {
    fail_msg("create %s: %s", g_backend.c_str(), e.text);
  }
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

// A backend that lacks a kernel for an op of a plan refuses the session, naming op and backend.
void a_plan_with_an_unclaimed_op_is_refused_at_session_creation(void**) {
  if (claims_every_op()) {
    printf("%s claims every op: nothing to refuse\n", g_backend.c_str());
    skip();
  }
  const std::vector<uint8_t> bytes = compile_plan(kModels[0], kOptimizers[0], "none");
  remat_plan* plan = nullptr;
  char message[512] = "";
  assert_int_equal(remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)), REMAT_OK);
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = g_backend.c_str();
  remat_session* session = nullptr;
  const remat_status status = remat_session_create(plan, &options, &session, message, sizeof(message));
  printf("%s: %s\n", g_backend.c_str(), message);
  remat_plan_close(plan);
  assert_int_equal(status, REMAT_ERROR_UNIMPLEMENTED);
  assert_null(session);
  assert_non_null(strstr(message, "not implemented by the"));
  assert_non_null(strstr(message, backend_name(g_backend).c_str()));
}

// Whether the backend can open a session here; prints why not.
bool backend_available() {
  const std::vector<uint8_t> bytes = compile_plan(kModels[0], kOptimizers[0], "none");
  remat_plan* plan = nullptr;
  char message[512] = "";
  if (remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)) != REMAT_OK) return true;
  remat_session_options options;
  remat_session_options_init(&options);
  options.backend = g_backend.c_str();
  remat_session* session = nullptr;
  const remat_status status = remat_session_create(plan, &options, &session, message, sizeof(message));
  remat_session_destroy(session);
  remat_plan_close(plan);
  if (status == REMAT_ERROR_UNAVAILABLE) {
    printf("backend %s is not available here: %s\n", g_backend.c_str(), message);
    return false;
  }
  return true;  // Any other failure shows up in the tests.
}

}  // namespace

int main(int argc, char** argv) {
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
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parameters_after_five_steps_match_the_cpu_backend),
      cmocka_unit_test(sqrt_is_byte_identical_to_no_recompute),
      cmocka_unit_test(selective_is_byte_identical_to_no_recompute),
      cmocka_unit_test(spilling_to_host_is_byte_identical_to_no_recompute),
      cmocka_unit_test(a_label_out_of_range_is_a_step_error),
      cmocka_unit_test(a_token_id_out_of_range_is_a_step_error),
      cmocka_unit_test(spill_prefetch_and_wait_round_trip_bytes),
      cmocka_unit_test(resuming_from_a_saved_state_is_exact),
      cmocka_unit_test(finite_check_reports_the_first_nonfinite_element_as_the_cpu_does),
      cmocka_unit_test(a_nan_in_the_data_skips_the_update_and_names_the_loss),
      cmocka_unit_test(a_nonfinite_gradient_stops_the_updates_from_its_own_on),
      cmocka_unit_test(a_learning_rate_set_at_run_time_equals_the_compiled_one),
      cmocka_unit_test(an_unknown_device_is_unavailable_with_a_message),
      cmocka_unit_test(every_op_is_claimed_and_matches_the_cpu_kernels_or_is_unimplemented),
      cmocka_unit_test(a_plan_with_an_unclaimed_op_is_refused_at_session_creation),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
