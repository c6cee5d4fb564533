// The OpenCL backend object, private to backends/opencl: device objects, kernels, copies.
//
// Device memory, all allocated at creation and never again:
//
//   arena      [one cl_mem, arena_bytes]       activations, grads, scratch (plan offsets)
//   persistent [one cl_mem, persistent_bytes]  params, optimizer state
//   flags      [one cl_mem, 64 bytes]          error flags of data-dependent checks
//   host       [caller's / session's memory]   spill slots, copied with the copy queue
//
// A tensor is (buffer of its region, byte offset): kernels take both as arguments. Kernels
// run on an in-order compute queue; spills and prefetches on a second in-order copy queue,
// ordered against the compute queue with markers and barriers (see opencl_copy.cc).
#ifndef REMAT_BACKENDS_OPENCL_OPENCL_BACKEND_H_
#define REMAT_BACKENDS_OPENCL_OPENCL_BACKEND_H_

#include "backends/opencl/opencl_profile.h"
#include <CL/cl.h>

#include "backends/opencl/opencl_device.h"
#include "runtime/backend.h"

namespace remat {
namespace opencl {

/// Every kernel of the program, created once at session creation.
enum KernelId {
  kUnaryOp,
  kBinaryOp,
  kBiasAdd,
  kReduceLeading,
  kDropout,
  kSoftmax,
  kSoftmaxGrad,
  kLayerNorm,
  kLayerNormGradDx,
  kLayerNormGradParams,
  kCrossEntropy,
  kCrossEntropyGrad,
  kMse,
  kEmbedding,
  kEmbeddingGrad,
  kPermute,
  kCopyRows,
  kSgdUpdate,
  kAdamUpdate,
  kKernelCount,
};

/// The |op| argument of unary_op (kernels/elementwise.cl).
enum UnaryOp { kRelu = 0, kGelu = 1, kTanh = 2, kSigmoid = 3, kScaleOp = 4 };
/// The |op| argument of binary_op (kernels/elementwise.cl).
enum BinaryOp { kAddOp = 0, kMulOp = 1, kReluGradOp = 2, kGeluGradOp = 3, kTanhGradOp = 4, kSigmoidGradOp = 5,
                kMseGradOp = 6 };

/// An asynchronous host<->arena copy not yet waited for.
struct PendingCopy {
  bool used;
  Region src_region, dst_region;
  uint64_t src_offset, dst_offset;
  cl_event done;  ///< Completes when the copy has.
  cl_event gate;  ///< Test mode only (delay_copies_): holds the copy back until its wait.
};

/// Spill/prefetch copies in flight at once; one more waits for the oldest first.
constexpr int kMaxPendingCopies = 64;

/// Sets kernel arguments in order, remembering the first failure.
class KernelArgs {
 public:
  explicit KernelArgs(cl_kernel kernel) : kernel_(kernel) {}
  /// Adds one scalar (cl_int, cl_ulong, cl_float, cl_long8, cl_mem) argument.
  template <typename T>
  KernelArgs& add(const T& value) {
    return raw(&value, sizeof(value));
  }
  /// Adds a __local buffer of |bytes|.
  KernelArgs& local(size_t bytes) { return raw(nullptr, bytes); }
  KernelArgs& raw(const void* value, size_t size) {
    if (status_ == CL_SUCCESS) status_ = clSetKernelArg(kernel_, index_, size, value);
    ++index_;
    return *this;
  }
  cl_int status() const { return status_; }

 private:
  cl_kernel kernel_;
  cl_uint index_ = 0;
  cl_int status_ = CL_SUCCESS;
};

class OpenclBackend final : public Backend {
 public:
  OpenclBackend() = default;
  ~OpenclBackend() override;
  OpenclBackend(const OpenclBackend&) = delete;
  OpenclBackend& operator=(const OpenclBackend&) = delete;

  /// Creates context, queues, buffers, program and kernels (opencl_backend.cc).
  remat_status init(const DeviceChoice& device, const RegionSetup& regions, ErrorBuffer* err);

  const DeviceProfile& profile() const override { return kOpenclProfile; }
  bool supports_op(uint16_t code) const override;
  remat_status run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) override;
  remat_status upload(Region region, uint64_t offset, const void* src, uint64_t bytes,
                      ErrorBuffer* err) override;
  remat_status download(Region region, uint64_t offset, void* dst, uint64_t bytes,
                        ErrorBuffer* err) override;
  remat_status sync(ErrorBuffer* err) override;

  // ---- Used by the op files -------------------------------------------------------------
  /// The buffer of a device region (arena or persistent); nullptr for the host region.
  cl_mem buffer(Region region) const {
    return region == Region::kArena ? arena_ : region == Region::kPersistent ? persistent_ : nullptr;
  }
  /// Appends |t| as the (buffer, byte offset) argument pair of a kernel.
  void add_tensor(KernelArgs& args, const TensorRef& t) const {
    args.add(buffer(t.region)).add(static_cast<cl_ulong>(t.offset));
  }
  cl_kernel kernel(KernelId id) const { return kernels_[id]; }
  /// Launches |id| over |items| work items (rounded up to the kernel's work-group size).
  remat_status launch(KernelId id, const KernelArgs& args, size_t items, const OpCall& call, ErrorBuffer* err);
  /// Launches |id| as one work-group of the kernel's work-group size (a power of two).
  remat_status launch_one_group(KernelId id, const KernelArgs& args, const OpCall& call, ErrorBuffer* err);
  /// The work-group size chosen for |id|.
  size_t group_size(KernelId id) const { return local_[id]; }
  /// Fills |bytes| bytes of a device tensor's region at |offset| with zeros.
  remat_status zero(const TensorRef& t, const OpCall& call, ErrorBuffer* err);
  /// Clears the error flags before a checking kernel.
  remat_status reset_flags(const OpCall& call, ErrorBuffer* err);
  /// Reads the flags after a checking kernel (blocking); *|out_bad| = first bad position or -1.
  remat_status read_flags(const OpCall& call, ErrorBuffer* err, int* out_bad);
  cl_mem flags() const { return flags_; }
  cl_command_queue* queue() { return &queue_; }
  /// Formats an OpenCL failure of op |call|.
  remat_status op_fail(const OpCall& call, cl_int status, const char* what, ErrorBuffer* err) const;

 private:
  remat_status build_program(ErrorBuffer* err);
  remat_status prepare_clblast(ErrorBuffer* err);

  // opencl_matmul.cc, opencl_copy.cc
  remat_status matmul(const OpCall& call, ErrorBuffer* err);
  remat_status spill_or_prefetch(const OpCall& call, bool spill, ErrorBuffer* err);
  remat_status wait(const OpCall& call, ErrorBuffer* err);
  remat_status retire(int slot, bool block, ErrorBuffer* err);

  // opencl_ops.cc
  remat_status run_kernel_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err);

  DeviceChoice device_{};
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;       ///< Kernels, uploads, downloads.
  cl_command_queue copy_queue_ = nullptr;  ///< Spills and prefetches.
  cl_mem arena_ = nullptr;
  cl_mem persistent_ = nullptr;
  cl_mem flags_ = nullptr;
  uint8_t* host_ = nullptr;
  uint64_t host_bytes_ = 0;
  cl_program program_ = nullptr;
  cl_kernel kernels_[kKernelCount] = {};
  size_t local_[kKernelCount] = {};
  PendingCopy pending_[kMaxPendingCopies] = {};
  uint64_t copies_issued_ = 0;
  /// REMAT_TEST_DELAY_COPIES=1 at creation: every spill and prefetch is held back until the
  /// op that waits for it, so a reader that does not wait reads stale bytes and tests notice.
  bool delay_copies_ = false;
  uint64_t copy_order_[kMaxPendingCopies] = {};  ///< Issue number of each pending slot.
};

}  // namespace opencl
}  // namespace remat

#endif  // REMAT_BACKENDS_OPENCL_OPENCL_BACKEND_H_
