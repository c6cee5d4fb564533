// The conformance suite's harness: plans, sessions and regions for the backend under test.
#include "tests/backends/conformance_harness.h"

#include <math.h>
#include <string.h>

#include "backends/device_profiles.h"
#include "backends/shared/widening_slices.h"
#include "compiler/compiler.h"
#include "plan/gpu_scratch.h"
#include "plan/spatial_shape.h"
#include "runtime/backend_registry.h"
#include "tests/backends/op_cases.h"
#include "tests/runtime/session_checks.h"

namespace conformance {

std::string g_backend = "cpu";

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
  for (uint16_t code = 1; code < remat::kOpCodeCount; ++code)
    all = all && backend->supports_op(code);
  remat::destroy_backend(backend);
  return all;
}

namespace {

remat::compiler::CompileOptions compile_options(const std::string& model,
                                                const std::string& optimizer,
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
      costs_at == std::string::npos
          ? backend_name(g_backend)
          : strategy.substr(costs_at + 7, strategy.find('/', costs_at + 1) - costs_at - 7)));
  const size_t checks_at = strategy.find("/checks=");
  if (checks_at != std::string::npos &&
      !remat::compiler::parse_finite_checks(strategy.substr(checks_at + 8), &o.finite_checks)) {
    fail_msg("bad checks in '%s'", strategy.c_str());
  }
  o.eval_program = strategy.find("/eval=off") == std::string::npos;
  if (strategy.find("/attention=unfused") != std::string::npos)
    o.attention = remat::compiler::AttentionKernel::kUnfused;
  const size_t precision_at = strategy.find("/precision=");
  if (precision_at != std::string::npos &&
      !remat::compiler::parse_precision(
          strategy.substr(precision_at + 11,
                          strategy.find('/', precision_at + 1) - precision_at - 11),
          &o.precision)) {
    fail_msg("bad precision in '%s'", strategy.c_str());
  }
  if (strategy.find("/arena=") != std::string::npos) {
    o.arena_budget = std::stoull(strategy.substr(strategy.find("/arena=") + 7));
  }
  return o;
}

}  // namespace

std::vector<uint8_t> compile_plan(const std::string& model, const std::string& optimizer,
                                  const std::string& strategy, bool data_parallel) {
  remat::compiler::CompileOptions o = compile_options(model, optimizer, strategy);
  o.data_parallel.enabled = data_parallel;
  return remat::compiler::compile(o).plan;
}

remat::compiler::CompileReport compile_report(const std::string& model,
                                              const std::string& optimizer,
                                              const std::string& strategy) {
  return compile_result(model, optimizer, strategy).report;
}

remat::compiler::CompileResult compile_result(const std::string& model,
                                              const std::string& optimizer,
                                              const std::string& strategy) {
  return remat::compiler::compile(compile_options(model, optimizer, strategy));
}

std::vector<uint8_t> compile_16_bit_plan(const std::string& model, const std::string& optimizer,
                                         const std::string& strategy, remat_dtype dtype) {
  namespace rc = remat::compiler;
  rc::CompileResult r = rc::compile(compile_options(model, optimizer, strategy));
  for (rc::Tensor& t : r.graph.tensors) {
    const bool working = t.role == rc::Role::kActivation || t.role == rc::Role::kGrad ||
                         t.role == rc::Role::kCheckpoint;
    if (working && t.dtype == REMAT_DTYPE_F32) t.dtype = dtype;
  }
  for (int t : r.graph.outputs) r.graph.tensors[static_cast<size_t>(t)].dtype = REMAT_DTYPE_F32;
  return rc::write_plan(r.graph, r.memory, r.report, kSeed);
}

std::vector<uint8_t> train(const std::string& model, const std::string& optimizer,
                           const std::string& strategy, const std::string& backend,
                           bool with_buffers, std::vector<float>* losses) {
  Run run(model, optimizer, strategy, backend);
  remat::io::SyntheticTask task(model, kBatch, kSeed);
  for (int s = 0; s < kSteps; ++s) {
    run.feed(task, static_cast<uint64_t>(s));
    float loss = 0;
    if (remat_session_step(run.session, &loss) != REMAT_OK) {
      fail_msg("%s on %s, step %d: %s", model.c_str(), backend.c_str(), s,
               remat_session_last_error(run.session));
    }
    if (!isfinite(loss))
      fail_msg("%s on %s, step %d: loss %g", model.c_str(), backend.c_str(), s, loss);
    if (losses != nullptr) losses->push_back(loss);
  }
  return with_buffers ? run.params_and_buffers() : run.params();
}

remat::OpCall make_call(remat::OpCode code, uint32_t index, const remat::TensorRef* in,
                        const remat::TensorRef* out) {
  remat::OpCall call{};
  call.code = static_cast<uint16_t>(code);
  call.index = index;
  remat::OpCallLists& lists = remat_test::call_lists();
  call.num_inputs = 1;
  lists.in[0] = in;
  call.num_outputs = out != nullptr ? 1 : 0;
  lists.out[0] = out;
  call.inputs = lists.in;
  call.outputs = lists.out;
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

BackendPair::BackendPair() {
  constexpr uint64_t kArena = 1 << 22, kPersistent = 4096;
  alignas(256) static uint8_t arenas[2][kArena], persistent[2][kPersistent];
  for (int b = 0; b < 2; ++b)
    backend[b] = backend_over(g_backend, arenas[b], kArena, persistent[b], kPersistent);
}

BackendPair::~BackendPair() {
  remat::destroy_backend(backend[0]);
  remat::destroy_backend(backend[1]);
}

remat::RegionSetup regions_for(const std::string& backend, void* arena, uint64_t arena_bytes,
                               void* persistent, uint64_t persistent_bytes, uint32_t alignment) {
  const remat::DeviceProfile* profile = remat::find_device_profile(backend.c_str());
  const bool on_host = profile != nullptr && profile->binds_host_memory;
  remat::RegionSetup regions{};
  regions.arena = on_host ? arena : nullptr;
  regions.arena_bytes = arena_bytes;
  regions.persistent = on_host ? persistent : nullptr;
  regions.persistent_bytes = persistent_bytes;
  regions.alignment = alignment;
  return regions;
}

remat::Backend* backend_over(const std::string& name, void* arena, uint64_t arena_bytes,
                             void* persistent, uint64_t persistent_bytes, uint32_t threads) {
  remat::RegionSetup regions =
      regions_for(name, arena, arena_bytes, persistent, persistent_bytes, 256);
  regions.threads = threads;
  remat_test::Errors e;
  remat::Backend* backend = nullptr;
  if (remat::create_backend(name.c_str(), regions, &backend, &e.buf) != REMAT_OK)
    fail_msg("create %s: %s", name.c_str(), e.text);
  return backend;
}

const remat::DeviceProfile& profile_under_test() {
  const remat::DeviceProfile* profile = remat::find_device_profile(g_backend.c_str());
  if (profile == nullptr) fail_msg("backend %s has no device profile", g_backend.c_str());
  return *profile;
}

int append_state(void* context, const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  static_cast<std::vector<uint8_t>*>(context)->insert(
      static_cast<std::vector<uint8_t>*>(context)->end(), p, p + bytes);
  return 0;
}
int read_state(void* context, uint64_t offset, void* data, size_t bytes) {
  const std::vector<uint8_t>& state = *static_cast<const std::vector<uint8_t>*>(context);
  if (offset > state.size() || bytes > state.size() - offset) return 1;
  memcpy(data, state.data() + offset, bytes);
  return 0;
}

bool backend_available() {
  return remat_test::backend_available(g_backend, compile_plan(kModels[0], kOptimizers[0], "none"));
}

uint64_t whole_widening_bytes(const remat_test::OpCase& c, const std::vector<remat_dtype>& floats) {
  std::vector<std::vector<int64_t>> dims;
  for (size_t i = 0; i < c.in_dims.size(); ++i) {
    if (c.ints.size() <= i || c.ints[i].empty()) dims.push_back(c.in_dims[i]);
  }
  dims.insert(dims.end(), c.out_dims.begin(), c.out_dims.end());
  uint64_t bytes = 0;
  for (size_t k = 0; k < dims.size() && k < floats.size(); ++k) {
    if (floats[k] == REMAT_DTYPE_F32) continue;
    uint64_t n = 1;
    for (const int64_t d : dims[k]) n *= static_cast<uint64_t>(d);
    bytes += (n * 4 + remat::kWideningAlignment - 1) / remat::kWideningAlignment *
             remat::kWideningAlignment;
  }
  return bytes;
}

uint64_t gpu_conv_scratch(remat::OpCode code, const std::vector<int64_t>& x,
                          const std::vector<int64_t>& w, const std::vector<int64_t>& iattrs) {
  const bool grad_weight = code == remat::OpCode::kConvGradWeight;
  if (!grad_weight && code != remat::OpCode::kConv && code != remat::OpCode::kConvGradInput)
    return 0;
  const remat::ConvShape c = remat::conv_shape(x.data(), w.data(), static_cast<int>(x.size()),
                                               remat::conv_attrs(iattrs.data()));
  return remat::gpu_conv_scratch_bytes(c.x.n, remat::gpu_conv_image_floats(c, grad_weight));
}

uint64_t gpu_conv_scratch(const remat_test::OpCase& c) {
  switch (c.code) {
    case remat::OpCode::kConv:
      return gpu_conv_scratch(c.code, c.in_dims[0], c.in_dims[1], c.iattrs);
    case remat::OpCode::kConvGradInput:
      return gpu_conv_scratch(c.code, c.out_dims[0], c.in_dims[1], c.iattrs);
    case remat::OpCode::kConvGradWeight:
      return gpu_conv_scratch(c.code, c.in_dims[1], c.out_dims[0], c.iattrs);
    default: return 0;
  }
}

uint64_t gpu_conv_scratch(const remat::OpCall& call) {
  const remat::OpCode code = static_cast<remat::OpCode>(call.code);
  if (code != remat::OpCode::kConv && code != remat::OpCode::kConvGradInput &&
      code != remat::OpCode::kConvGradWeight)
    return 0;
  auto dims = [](const remat::TensorRef& t) {
    return std::vector<int64_t>(t.dims, t.dims + t.rank);
  };
  const std::vector<int64_t> iattrs(call.iattrs, call.iattrs + call.num_iattrs);
  if (code == remat::OpCode::kConvGradInput)
    return gpu_conv_scratch(code, dims(*call.outputs[0]), dims(*call.inputs[1]), iattrs);
  if (code == remat::OpCode::kConvGradWeight)
    return gpu_conv_scratch(code, dims(*call.inputs[1]), dims(*call.outputs[0]), iattrs);
  return gpu_conv_scratch(code, dims(*call.inputs[0]), dims(*call.inputs[1]), iattrs);
}

}  // namespace conformance
