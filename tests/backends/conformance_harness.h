// The conformance suite's harness (tests/backends/test_conformance*.cc): the backend under
// test, its models and optimizers, plans compiled for it, sessions that fail the test on any
// error, and direct Backend objects over test regions.
#ifndef REMAT_TESTS_BACKENDS_CONFORMANCE_HARNESS_H_
#define REMAT_TESTS_BACKENDS_CONFORMANCE_HARNESS_H_

#include "tests/cmocka_cpp.h"

#include <stdio.h>

#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "io/synthetic_task.h"
#include "plan/ops.h"
#include "remat/remat.h"
#include "backends/device_profile.h"
#include "runtime/backend.h"
#include "tests/backends/op_cases.h"

namespace conformance {

constexpr int kSteps = 5;
constexpr int64_t kBatch = 8;
constexpr uint64_t kSeed = 3;

/// The backend under test ("cpu", "opencl", "opencl:0:0", ...), set by main.
extern std::string g_backend;

constexpr const char* kModels[] = {
    "mlp:layers=4,width=32,in=16,classes=4,dropout=0.2",
    "resmlp:layers=4,width=32,in=16,classes=4,dropout=0.2",
    "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=40,classes=3,dropout=0.1",
    // Convolutions, batch norms with their running statistics, shortcuts, strided 1x1 convs.
    "resnet:depth=8,width=4,in=3x8x8,classes=4",
};
/// A resnet whose first stage's convolutions and their gradients take more than any
/// backend's batch chunk at kBatch in float32 (4.5 MiB an image for a convolution's input and
/// output): its 16-bit plans widen them a chunk of the batch at a time
/// (backends/shared/batch_chunks.h), on the GPUs too.
constexpr const char* kBatchChunkedResnet = "resnet:depth=8,width=16,in=3x192x192,classes=4";
/// A transformer whose scores (8 MiB an item for 4 heads of 512 queries and keys in float32), in
/// its unfused attention (strategy option "/attention=unfused": head_matmul, softmax and their
/// gradients), take more than any backend's batch chunk at kBatch: its 16-bit plans widen them a
/// chunk of the batch at a time.
constexpr const char* kBatchChunkedUnfused =
    "transformer:layers=1,hidden=64,heads=4,ffn=64,seq=512,vocab=40,classes=3";
/// An mlp whose float32 input's rows (4.5 MiB each) take more than any backend's batch chunk at
/// kBatch: its 16-bit plans round them (the first layer's product and its weight gradient) a
/// chunk of rows at a time (backends/shared/batch_chunks.h: matmul_rows), and the GPUs widen those
/// products' other rank-2 tensors so too.
constexpr const char* kBatchChunkedMlp = "mlp:layers=2,width=4,in=1179648,classes=4";
constexpr const char* kOptimizers[] = {
    "sgd:lr=0.05,momentum=0.9",
    "adamw:lr=0.01,weight_decay=0.01",
};

/// The part of a backend spec before the first ':' ("opencl:0:0" -> "opencl").
inline std::string backend_name(const std::string& spec) { return spec.substr(0, spec.find(':')); }

/// Whether the backend under test has a kernel for every op of the catalogue (the null
/// skeleton has none); the checks that train need every op and are skipped otherwise.
bool claims_every_op();

/// Whether the backend can open a session here; prints why not.
bool backend_available();

// Skips the calling test (cmocka's skip) on a backend that lacks kernels; call it first, before
// any container is alive (skip longjmps past destructors).
#define SKIP_UNLESS_EVERY_OP_IS_CLAIMED()                                                         \
  do {                                                                                            \
    if (!conformance::claims_every_op()) {                                                        \
      printf("%s lacks kernels: training checks do not apply\n", conformance::g_backend.c_str()); \
      skip();                                                                                     \
    }                                                                                             \
  } while (0)

/// |model| with |optimizer| at kBatch and kSeed, for the backend under test. |strategy| may
/// carry a device budget as "STRATEGY/device=BYTES" (spilling to host), placed by the spill
/// cost model of the backend under test, or of the one named by "/costs=NAME";
/// "/checks=atomic|off" sets the non-finite guard (default on); "/eval=off" leaves the eval
/// program out; "/precision=bf16|fp16" stores activations in 16 bits (compiler/precision.h);
/// "/arena=BYTES" is the arena budget of strategies budget and auto; "/attention=unfused" compiles
/// a template's attention to its unfused ops (compiler/attention_kernel.h). |data_parallel|: the
/// plan sums its gradients over ranks (compiler/data_parallel.h).
std::vector<uint8_t> compile_plan(const std::string& model, const std::string& optimizer,
                                  const std::string& strategy, bool data_parallel = false);

/// The compiler's report of compile_plan(|model|, |optimizer|, |strategy|).
remat::compiler::CompileReport compile_report(const std::string& model,
                                              const std::string& optimizer,
                                              const std::string& strategy);

/// The whole compile of compile_plan(|model|, |optimizer|, |strategy|): its graph's ops are the
/// plan's, in order.
remat::compiler::CompileResult compile_result(const std::string& model,
                                              const std::string& optimizer,
                                              const std::string& strategy);

/// compile_plan(|model|, |optimizer|, |strategy|) with every f32 activation, checkpoint and
/// gradient stored as |dtype| (f16 or bf16) but the eval program's outputs: the tensors a
/// mixed-precision compile stores in 16 bits, and the parameters' gradients too.
std::vector<uint8_t> compile_16_bit_plan(const std::string& model, const std::string& optimizer,
                                         const std::string& strategy, remat_dtype dtype);

/// A plan open in a session on one backend; fails the test on any error.
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

  void feed(const remat::io::SyntheticTask& task, uint64_t step) {
    const auto values = task.batch(step);
    const auto names = task.names();
    for (size_t i = 0; i < names.size(); ++i) {
      if (remat_session_set_input(session, names[i].c_str(), values[i].data(), values[i].size()) !=
          REMAT_OK) {
        fail_msg("set_input %s: %s", names[i].c_str(), remat_session_last_error(session));
      }
    }
  }

  /// The parameters, concatenated in plan order.
  std::vector<uint8_t> params() const { return bindings_bytes(REMAT_BINDING_PARAM); }

  /// The buffers (batch norms' running statistics and counts), concatenated in plan order.
  std::vector<uint8_t> buffers() const { return bindings_bytes(REMAT_BINDING_BUFFER); }

  /// Every tensor of binding |kind| (parameters or buffers), read by name and concatenated.
  std::vector<uint8_t> bindings_bytes(remat_binding_kind kind) const {
    std::vector<uint8_t> all;
    uint32_t count = 0;
    remat_plan_binding_count(plan, kind, &count);
    for (uint32_t i = 0; i < count; ++i) {
      remat_tensor_info info;
      remat_plan_binding(plan, kind, i, &info);
      std::vector<uint8_t> one(info.bytes);
      if (remat_session_read_param(session, info.name, one.data(), one.size()) != REMAT_OK) {
        fail_msg("read_param %s: %s", info.name, remat_session_last_error(session));
      }
      all.insert(all.end(), one.begin(), one.end());
    }
    return all;
  }

  /// The parameters, then the buffers: all the persistent state a step changes but the
  /// optimizer's moments.
  std::vector<uint8_t> params_and_buffers() const {
    std::vector<uint8_t> all = params();
    const std::vector<uint8_t> b = buffers();
    all.insert(all.end(), b.begin(), b.end());
    return all;
  }
};

/// Parameters (f32, in plan order) after kSteps steps of |model| with |optimizer| under
/// |strategy| on |backend|; then the buffers too when |with_buffers|. Each step's loss is
/// appended to |losses| when given.
std::vector<uint8_t> train(const std::string& model, const std::string& optimizer,
                           const std::string& strategy, const std::string& backend,
                           bool with_buffers = false, std::vector<float>* losses = nullptr);

/// The OpCall of a one-input op over |in| and |out| (out may be null).
remat::OpCall make_call(remat::OpCode code, uint32_t index, const remat::TensorRef* in,
                        const remat::TensorRef* out);

/// A rank-1 f32 tensor of |bytes| bytes at |offset| in |region|.
remat::TensorRef bytes_tensor(remat::Region region, uint64_t offset, uint64_t bytes);

/// Regions for a Backend created directly: a backend that binds host memory (its profile says)
/// works in |arena| and |persistent|; a device backend gets only their sizes and allocates.
remat::RegionSetup regions_for(const std::string& backend, void* arena, uint64_t arena_bytes,
                               void* persistent, uint64_t persistent_bytes, uint32_t alignment);

/// A backend |name| over |arena| and |persistent| as regions_for() gives them (256-byte
/// alignment), its CPU kernels on |threads| threads (0: the port's), or a failed test naming
/// the backend and its error. The caller destroys it.
remat::Backend* backend_over(const std::string& name, void* arena, uint64_t arena_bytes,
                             void* persistent, uint64_t persistent_bytes, uint32_t threads = 0);

/// Two backends of the kind under test, each over 4 MiB of arena of its own (static: one pair
/// alive at a time): backend[0] runs the reference, float32 calls, backend[1] the call tested.
struct BackendPair {
  remat::Backend* backend[2] = {nullptr, nullptr};
  BackendPair();
  ~BackendPair();
  BackendPair(const BackendPair&) = delete;
  BackendPair& operator=(const BackendPair&) = delete;
};

/// Bytes of float32 copies of |c|'s float tensors that are 16-bit in |floats| (as
/// remat_test::run_widened_case takes them), each rounded to kWideningAlignment: the workspace
/// widening the call whole would take.
uint64_t whole_widening_bytes(const remat_test::OpCase& c, const std::vector<remat_dtype>& floats);

/// The scratch a GPU backend's convolution |code| (conv, conv_grad_input or conv_grad_weight of
/// one group) over images of dims |x| with filters of dims |w| and iattrs |iattrs| holds for its
/// column matrices, by plan/gpu_scratch.h (backends/gpu/ops/conv.cc); 0 for any other op.
uint64_t gpu_conv_scratch(remat::OpCode code, const std::vector<int64_t>& x,
                          const std::vector<int64_t>& w, const std::vector<int64_t>& iattrs);

/// The same of an op case, or of a resolved call.
uint64_t gpu_conv_scratch(const remat_test::OpCase& c);
uint64_t gpu_conv_scratch(const remat::OpCall& call);

/// The profile of the backend under test, or a failed test.
const remat::DeviceProfile& profile_under_test();

/// A state writer appending to a std::vector<uint8_t> (|context|).
int append_state(void* context, const void* data, size_t bytes);
/// A state reader from a std::vector<uint8_t> (|context|); fails past its end.
int read_state(void* context, uint64_t offset, void* data, size_t bytes);

/// The tests of test_conformance_step_checks.cc: data refused at step time, the non-finite
/// guard, the learning rate.
extern const struct CMUnitTest kStepCheckTests[];
extern const size_t kStepCheckTestCount;

/// The tests of test_conformance_eval.cc: the eval program and its outputs.
extern const struct CMUnitTest kEvalTests[];
extern const size_t kEvalTestCount;

/// The tests of test_conformance_gpu_half.cc: the GPU kernels that read 16-bit tensors.
extern const struct CMUnitTest kGpuHalfTests[];
extern const size_t kGpuHalfTestCount;

/// The tests of test_conformance_widening.cc: ops on 16-bit tensors run with the float32 kernels.
extern const struct CMUnitTest kWideningTests[];
extern const size_t kWideningTestCount;

/// The tests of test_conformance_workspace.cc: each backend's workspace against remat compile's
/// figure.
extern const struct CMUnitTest kWorkspaceTests[];
extern const size_t kWorkspaceTestCount;

/// The tests of test_conformance_batch_chunks.cc: the spatial ops widened a chunk of their
/// batch at a time.
extern const struct CMUnitTest kBatchChunkTests[];
extern const size_t kBatchChunkTestCount;

/// The tests of test_conformance_gpu_conv.cc: the GPUs' convolutions as GEMMs at their scratch's
/// bound, and pointwise ones in place.
extern const struct CMUnitTest kGpuConvTests[];
extern const size_t kGpuConvTestCount;

/// The tests of test_conformance_half_as_is.cc: the ops every backend runs on 16-bit tensors
/// without widening them (data movement, embedding).
extern const struct CMUnitTest kHalfAsIsTests[];
extern const size_t kHalfAsIsTestCount;

}  // namespace conformance

#endif  // REMAT_TESTS_BACKENDS_CONFORMANCE_HARNESS_H_
