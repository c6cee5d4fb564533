// The backend interface: what the executor asks of a CPU, OpenCL or CUDA device.
//
// A backend owns device memory for the arena (CPU: the caller's buffer), runs one op at a
// time on tensors given as (region, offset) and copies between host and its regions. It
// decides nothing: shapes, offsets and the op order come from the verified plan.
#ifndef REMAT_RUNTIME_BACKEND_H_
#define REMAT_RUNTIME_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#include "backends/device_profile.h"
#include "plan/numeric_message.h"
#include "plan/ops.h"
#include "plan/region.h"
#include "remat/remat.h"

namespace remat {

/// Bumped when the Backend class changes incompatibly.
constexpr uint32_t kBackendApiVersion = 2;

#if REMAT_COMPACT_TABLES
/// Byte offsets and sizes in a session's tables: 32 bits in a build with compact tables (meson
/// -Dcompact_tables, on in firmware builds), whose sessions refuse a plan that does not fit.
using TensorBytes = uint32_t;
/// Element counts and dimensions in a session's tables (32 bits with compact tables).
using TensorDim = int32_t;
#else
/// Byte offsets and sizes in a session's tables.
using TensorBytes = uint64_t;
/// Element counts and dimensions in a session's tables.
using TensorDim = int64_t;
#endif

/// One tensor as an op sees it. Shapes are verified before any op runs.
struct TensorRef {
  Region region;                   ///< Region the bytes live in.
  uint8_t dtype;                   ///< remat_dtype.
  uint8_t rank;                    ///< Number of used |dims|.
  TensorBytes offset;              ///< Byte offset in |region|.
  TensorBytes bytes;               ///< Size in bytes.
  TensorDim numel;                 ///< Product of dims.
  TensorDim dims[REMAT_MAX_RANK];  ///< Shape, outermost first.
};

/// One op ready to run: opcode, tensors and attributes, resolved once at session creation.
/// The tensor lists point into storage of the caller's (a session keeps one array of every op's
/// tensors), so that an op of one input takes one pointer, not kMaxOpInputs.
struct OpCall {
  uint16_t code;                    ///< remat::OpCode value.
  uint8_t num_inputs;               ///< Entries of |inputs|, at most kMaxOpInputs.
  uint8_t num_outputs;              ///< Entries of |outputs|, at most kMaxOpOutputs.
  uint32_t index;                   ///< Position in the plan's op list.
  const TensorRef* const* inputs;   ///< Input tensors.
  const TensorRef* const* outputs;  ///< Output tensors.
  const int64_t* iattrs;            ///< Int attributes (plan/op_catalogue.h), may be null.
  const float* fattrs;              ///< Float attributes, may be null.
  uint32_t num_iattrs;              ///< Count of |iattrs|.
  uint32_t num_fattrs;              ///< Count of |fattrs|.
};

#if REMAT_COMPACT_TABLES
static_assert(sizeof(TensorRef) == 40, "docs/firmware.md gives a compact TensorRef's size");
#endif
static_assert(sizeof(void*) != 4 || sizeof(OpCall) == 32,
              "docs/firmware.md gives an OpCall's size on a 32-bit target");

/// Tensor lists of their own for an OpCall built outside a session: a copy of an op's call
/// whose tensors a backend replaces (a 16-bit tensor's float32 view), or a test's call.
struct OpCallLists {
  const TensorRef* in[kMaxOpInputs];    ///< Input tensors.
  const TensorRef* out[kMaxOpOutputs];  ///< Output tensors.
  /// |call| with its lists copied here and pointing here, for |in| and |out| to change.
  OpCall adopt(const OpCall& call) {
    OpCall copy = call;
    for (int i = 0; i < call.num_inputs; ++i) in[i] = call.inputs[i];
    for (int o = 0; o < call.num_outputs; ++o) out[o] = call.outputs[o];
    copy.inputs = in;
    copy.outputs = out;
    return copy;
  }
};

/// Per-step values every op may read.
struct StepContext {
  uint64_t seed;  ///< The plan's RNG seed.
  uint64_t step;  ///< Index of the step being run, from 0.
  /// The session's communicator (remat_session_options.communicator), which allreduce_start
  /// and allreduce_wait call; nullptr in a session without one (its plan has no allreduce op).
  const remat_communicator* communicator = nullptr;
  /// The communicator's rank (0 without one). Dropout draws its mask for rank r's rows as one
  /// process of all the ranks' rows would: a batch-major tensor's element i is element
  /// r x numel + i of the whole batch's.
  uint64_t rank = 0;
};

/// Where a backend writes an error message: a fixed buffer owned by the session.
struct ErrorBuffer {
  char* text;       ///< Destination, always NUL-terminated after a write.
  size_t capacity;  ///< Bytes available at |text|.
  /// 1 + OpCall::index of the op whose check of step data failed (bad ids or labels, a
  /// non-finite value), set beside the status; 0 otherwise. The session names the op's tensor.
  uint32_t failed_op = 0;
};

#if REMAT_MESSAGES
/// Formats a message into |err| (printf-style) and returns |status|, for one-line error returns.
remat_status set_error(ErrorBuffer* err, remat_status status, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
#else
/// Without messages (meson -Dmessages=disabled, the default of firmware builds): writes the status,
/// the calling line and the integer arguments into |err| (plan/numeric_message.h), the format's
/// text left out; returns |status|.
template <typename... Args>
inline remat_status set_error(ErrorBuffer* err, remat_status status, MessageSite site,
                              const Args&... args) {
  if (err != nullptr) write_numeric_message(err->text, err->capacity, status, site, args...);
  return status;
}
#endif

/// Sizes and base pointers of the regions a backend is created over, and its threads.
struct RegionSetup {
  void* arena;                ///< Caller's arena (CPU) or nullptr (device backends allocate).
  uint64_t arena_bytes;       ///< Size of the arena.
  void* persistent;           ///< Persistent region in host memory (CPU) or nullptr.
  uint64_t persistent_bytes;  ///< Size of the persistent region.
  void* host;                 ///< Host spill region, or nullptr when the plan spills nothing.
  uint64_t host_bytes;        ///< Size of the host region.
  uint32_t alignment;         ///< Alignment the plan's offsets assume.
  uint32_t threads;           ///< remat_session_options.threads (CPU kernels; 0: the port's
                              ///< hardware threads).
  /// The plan's matmul_precision is tf32: products may round their inputs to TF32. Only a
  /// backend whose profile has tf32_matmuls reads it; the others compute float32 products.
  bool tf32_matmuls;
  /// The session's communicator sums the tensors where the backend keeps them (REMAT_MEMORY_CUDA):
  /// the all-reduce ops need no host slots. Only the cuda backend reads it.
  bool device_memory_sums;
};

/// An initial-value rule of a persistent tensor that a device backend may draw itself
/// (runtime/param_init.cc; plan/philox.h gives the values).
struct InitDraw {
  enum Kind : int32_t {
    kZeros,    ///< Zero bytes over the whole tensor (f32 or i64).
    kOnes,     ///< 1.0f in every f32 element.
    kUniform,  ///< uniform_init(word i of the tensor's init stream, scale) in element i.
  };
  Kind kind;
  float scale;      ///< kUniform's bound.
  uint64_t seed;    ///< The plan's seed.
  uint32_t tensor;  ///< The tensor's index in the plan: the key of its init stream.
};

/// A device that runs plans. Created once per session; never allocates after creation.
class Backend {
 public:
  virtual ~Backend() = default;
  /// The facts about this kind of device (its entry of backends/device_profiles.h).
  virtual const DeviceProfile& profile() const = 0;
  /// Short name, e.g. "cpu": the profile's.
  const char* name() const { return profile().name; }
  /// Whether run_op() implements |code|: whether the backend's dispatch table, built from the
  /// op catalogue, has a kernel for it. Checked for every op at session creation.
  virtual bool supports_op(uint16_t code) const = 0;
  /// Called once at session creation, after every op of the plan is resolved into |calls|
  /// (|count| of them, which outlive the backend) and claimed: the backend obtains here the
  /// working memory its ops need beyond its regions (the CPU backend: the float32 workspace it
  /// widens 16-bit tensors into, backends/cpu/widening.h). Default: nothing to obtain.
  virtual remat_status prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err) {
    (void)calls;
    (void)count;
    (void)err;
    return REMAT_OK;
  }
  /// Bytes of the workspace prepare() obtained beside the regions: the most any op it prepared
  /// needs, to widen 16-bit tensors into float32 copies and (the GPU backends) for its scratch;
  /// the figure `remat compile` states for the backend (compiler/precision.h: workspace_bytes).
  /// Default: 0.
  virtual uint64_t workspace_bytes() const { return 0; }
  /// Runs one op. Data-dependent failures (an id out of range) return a status and a message.
  virtual remat_status run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) = 0;
  /// Copies |bytes| bytes from host |src| into |region| at |offset|; REMAT_ERROR_OUT_OF_REGION,
  /// copying nothing, where they reach past the region (download likewise).
  virtual remat_status upload(Region region, uint64_t offset, const void* src, uint64_t bytes,
                              ErrorBuffer* err) = 0;
  /// Copies |bytes| bytes from |region| at |offset| to host |dst|.
  virtual remat_status download(Region region, uint64_t offset, void* dst, uint64_t bytes,
                                ErrorBuffer* err) = 0;
  /// Whether draw_init() draws initial values on the device. Default: no; the host draws them
  /// and uploads them.
  virtual bool draws_init() const { return false; }
  /// Fills tensor |t| of the persistent region by rule |d| on the device, giving the bytes the
  /// host's draw gives (runtime/param_init.cc), queued like an op. Only called where
  /// draws_init() is true.
  virtual remat_status draw_init(const TensorRef& t, const InitDraw& d, ErrorBuffer* err) {
    (void)t;
    (void)d;
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED, "%s: no initial values on the device", name());
  }
  /// Marks the start of a step run with |ctx|, before its first run_op(). A backend may record
  /// the step (CUDA captures it as a graph). Default: nothing to do.
  virtual remat_status begin_step(const StepContext&, ErrorBuffer*) { return REMAT_OK; }
  /// Marks the end of the step, after its last run_op() and before sync(). Default: nothing.
  virtual remat_status end_step(ErrorBuffer*) { return REMAT_OK; }
  /// Waits until every queued op and copy finished. Default: nothing is ever queued.
  virtual remat_status sync(ErrorBuffer*) { return REMAT_OK; }
  /// Called between steps after the session changed ops' attributes (the learning rate): a
  /// backend that replays recorded launches records them anew. Default: nothing is recorded.
  virtual void attributes_changed() {}
};

}  // namespace remat

#endif  // REMAT_RUNTIME_BACKEND_H_
