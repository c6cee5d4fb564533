// Training-test helpers over the public C API.
#include "training_harness.h"

#include "tests/cmocka_cpp.h"

namespace {

remat::compiler::CompileOptions options_of(const std::string& model, int64_t batch,
                                           const std::string& optimizer, uint64_t seed,
                                           const std::string& strategy, uint64_t budget,
                                           uint64_t device_budget) {
  remat::compiler::CompileOptions o;
  o.model = model;
  o.batch = batch;
  o.optimizer = optimizer;
  o.seed = seed;
  o.strategy = strategy;
  o.arena_budget = budget;
  o.device_budget = device_budget;
  return o;
}

}  // namespace

TrainingRun::TrainingRun(const std::string& model, int64_t batch, const std::string& optimizer,
                         uint64_t seed, const std::string& strategy, uint64_t budget,
                         uint64_t device_budget, size_t threads)
    : TrainingRun(options_of(model, batch, optimizer, seed, strategy, budget, device_budget),
                  threads) {}

TrainingRun::TrainingRun(const remat::compiler::CompileOptions& o, size_t threads) {
  try {
    bytes = remat::compiler::compile(o).plan;
  } catch (const std::exception& e) {
    fail_msg("compile %s: %s", o.model.c_str(), e.what());
  }
  char message[512];
  if (remat_plan_open(bytes.data(), bytes.size(), &plan, message, sizeof(message)) != REMAT_OK) {
    fail_msg("plan_open: %s", message);
  }
  remat_session_options options;
  remat_session_options_init(&options);
  options.threads = threads;
  if (remat_session_create(plan, &options, &session, message, sizeof(message)) != REMAT_OK) {
    fail_msg("session_create: %s", message);
  }
}

TrainingRun::~TrainingRun() {
  remat_session_destroy(session);
  remat_plan_close(plan);
}

void TrainingRun::set(const std::string& name, const void* data, size_t size) {
  if (remat_session_set_input(session, name.c_str(), data, size) != REMAT_OK) {
    fail_msg("set_input %s: %s", name.c_str(), remat_session_last_error(session));
  }
}

float TrainingRun::step() {
  float loss = 0;
  if (remat_session_step(session, &loss) != REMAT_OK)
    fail_msg("step: %s", remat_session_last_error(session));
  return loss;
}

std::vector<uint8_t> TrainingRun::params() const {
  std::vector<uint8_t> all;
  uint32_t count = 0;
  // No parameters would make every comparison of two runs pass.
  if (remat_plan_binding_count(plan, REMAT_BINDING_PARAM, &count) != REMAT_OK || count == 0) {
    fail_msg("the plan lists no parameters");
  }
  uint32_t buffers = 0;
  if (remat_plan_binding_count(plan, REMAT_BINDING_BUFFER, &buffers) != REMAT_OK)
    fail_msg("no buffer count");
  for (uint32_t i = 0; i < count + buffers; ++i) {
    remat_tensor_info info;
    const remat_binding_kind kind = i < count ? REMAT_BINDING_PARAM : REMAT_BINDING_BUFFER;
    if (remat_plan_binding(plan, kind, i < count ? i : i - count, &info) != REMAT_OK)
      fail_msg("no binding %u", i);
    std::vector<uint8_t> one(info.bytes);
    // A failed read would leave zeros behind, and two runs that both failed would compare equal.
    if (remat_session_read_param(session, info.name, one.data(), one.size()) != REMAT_OK) {
      fail_msg("read_param %s: %s", info.name, remat_session_last_error(session));
    }
    all.insert(all.end(), one.begin(), one.end());
  }
  return all;
}

std::vector<float> TrainingRun::param(const std::string& name) const {
  uint32_t count = 0;
  remat_plan_binding_count(plan, REMAT_BINDING_PARAM, &count);
  for (uint32_t i = 0; i < count; ++i) {
    remat_tensor_info info;
    if (remat_plan_binding(plan, REMAT_BINDING_PARAM, i, &info) != REMAT_OK)
      fail_msg("no parameter binding %u", i);
    if (name != info.name) continue;
    std::vector<float> out(info.bytes / 4);
    if (remat_session_read_param(session, info.name, out.data(), info.bytes) != REMAT_OK) {
      fail_msg("read_param %s: %s", info.name, remat_session_last_error(session));
    }
    return out;
  }
  fail_msg("no parameter %s", name.c_str());
  return {};
}
