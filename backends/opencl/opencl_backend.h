// The OpenCL backend object, private to backends/opencl: device objects, kernels, copies.
//
// Device memory, all allocated at creation and never again:
//
//   arena      [one cl_mem, arena_bytes]       activations, grads, scratch (plan offsets)
//   persistent [one cl_mem, persistent_bytes]  params, optimizer state
//   state      [one cl_mem, 64 bytes]          gpu::GpuState: step values, bad-data report
//   workspace  [one cl_mem, prepare()]         float32 slices of 16-bit tensors (widening)
//   host       [caller's / session's memory]   spill slots, copied with the copy queue
//
// A tensor is (buffer of its region, byte offset): kernels take both as arguments. Ops are
// resolved through the GPU backends' shared table (backends/gpu/ops/ops.h), which marshals
// every kernel's arguments through this object's gpu::Launcher side. Kernels run on an
// in-order compute queue; spills and prefetches on a second in-order copy queue, ordered
// against the compute queue with markers and barriers (see opencl_copy.cc).
#ifndef REMAT_BACKENDS_OPENCL_OPENCL_BACKEND_H_
#define REMAT_BACKENDS_OPENCL_OPENCL_BACKEND_H_

#include "backends/opencl/opencl_profile.h"
#include <CL/cl.h>

#include "backends/gpu/launcher.h"
#include "backends/opencl/opencl_device.h"
#include "runtime/backend.h"

namespace remat {
namespace opencl {

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

class OpenclBackend final : public Backend, private gpu::Launcher {
 public:
  OpenclBackend() = default;
  ~OpenclBackend() override;
  OpenclBackend(const OpenclBackend&) = delete;
  OpenclBackend& operator=(const OpenclBackend&) = delete;

  /// Creates context, queues, buffers, program and kernels (opencl_backend.cc).
  remat_status init(const DeviceChoice& device, const RegionSetup& regions, ErrorBuffer* err);

  const DeviceProfile& profile() const override { return kOpenclProfile; }
  bool supports_op(uint16_t code) const override;
  /// Allocates the workspace (gpu::workspace_bytes: widening slices, attention scores): the most
  /// any of |calls| needs, nothing where none needs any. A later call with larger needs (tests
  /// running ops one by one) replaces it. Lays out the host slots of |calls|' all-reduce buckets
  /// (gpu::HostStaging), replacing any earlier ones.
  remat_status prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err) override;
  uint64_t workspace_bytes() const override { return workspace_bytes_; }
  remat_status run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) override;
  remat_status upload(Region region, uint64_t offset, const void* src, uint64_t bytes,
                      ErrorBuffer* err) override;
  remat_status download(Region region, uint64_t offset, void* dst, uint64_t bytes,
                        ErrorBuffer* err) override;
  remat_status sync(ErrorBuffer* err) override;
  bool draws_init() const override { return true; }
  remat_status draw_init(const TensorRef& t, const InitDraw& d, ErrorBuffer* err) override;

 private:
  /// REMAT_ERROR_OUT_OF_REGION, naming the copy |what|, unless |bytes| at |offset| lie in
  /// |region| (upload() and download()).
  remat_status check_region(Region region, uint64_t offset, uint64_t bytes, const char* what,
                            ErrorBuffer* err) const;
  /// Bytes of |region| that upload() and download() may reach: 0 for the host region when
  /// there is none, and for any other value.
  uint64_t region_bytes(Region region) const {
    switch (region) {
      case Region::kArena: return arena_bytes_;
      case Region::kPersistent: return persistent_bytes_;
      case Region::kHost: return host_ != nullptr ? host_bytes_ : 0;
    }
    return 0;
  }
  /// The buffer of a device region (arena, persistent or gpu::kWorkspaceRegion); nullptr for
  /// the host region.
  cl_mem buffer(Region region) const {
    return region == Region::kArena          ? arena_
           : region == Region::kPersistent   ? persistent_
           : region == gpu::kWorkspaceRegion ? workspace_
                                             : nullptr;
  }
  /// Formats an OpenCL failure of op |call| (null: of no op).
  remat_status op_fail(const OpCall* call, cl_int status, const char* what, ErrorBuffer* err) const;
  remat_status build_program(ErrorBuffer* err);
  remat_status prepare_clblast(ErrorBuffer* err);
  void set_arg(size_t bytes, const void* value);
  remat_status enqueue(size_t global, size_t local, const OpCall* call, ErrorBuffer* err);

  // gpu::Launcher (opencl_backend.cc): arguments set with clSetKernelArg as they come.
  void begin(gpu::KernelId id) override;
  void scalar(const void* value, size_t bytes) override { set_arg(bytes, value); }
  void tensor(const TensorRef& t) override;
  void state() override { set_arg(sizeof(cl_mem), &state_); }
  void local(size_t bytes) override { set_arg(bytes, nullptr); }
  remat_status launch(size_t items, const OpCall* call, ErrorBuffer* err) override;
  remat_status launch_one_group(const OpCall* call, ErrorBuffer* err) override;
  size_t group_size(gpu::KernelId id) const override { return local_[id]; }
  remat_status zero(const TensorRef& t, const OpCall& call, ErrorBuffer* err) override;
  remat_status copy(const TensorRef& src, const TensorRef& dst, const OpCall& call,
                    ErrorBuffer* err) override;
  remat_status begin_check(const OpCall& call, ErrorBuffer* err) override;
  remat_status end_check(const OpCall& call, ErrorBuffer* err) override;
  // opencl_matmul.cc, opencl_copy.cc
  remat_status matmul(const OpCall& call, bool accumulate, ErrorBuffer* err) override;
  remat_status head_matmul(const OpCall& call, ErrorBuffer* err) override;
  remat_status gemm(const gpu::GemmBatch& g, const OpCall& call, ErrorBuffer* err) override;
  // CLBlast's products here are float32: 16-bit operands are widened (ops/widening.h).
  bool takes_half_operands(const OpCall&) const override { return false; }
  uint64_t workspace_size() const override { return workspace_bytes_; }
  remat_status spill(const OpCall& call, ErrorBuffer* err) override {
    return spill_or_prefetch(call, true, err);
  }
  remat_status prefetch(const OpCall& call, ErrorBuffer* err) override {
    return spill_or_prefetch(call, false, err);
  }
  remat_status wait(const OpCall& call, ErrorBuffer* err) override;
  const gpu::HostStaging& host_staging() const override { return staging_; }
  remat_status read_to_host(const TensorRef& t, void* host, const OpCall& call,
                            ErrorBuffer* err) override;
  remat_status write_from_host(const TensorRef& t, const void* host, const OpCall& call,
                               ErrorBuffer* err) override;
  remat_status finish_host_copies(const OpCall& call, ErrorBuffer* err) override;
  // Buffers are cl_mem objects, not CUDA device memory: the session refuses such a communicator.
  bool tensors_in_cuda_memory() const override { return false; }
  float* cuda_address(const TensorRef&) const override { return nullptr; }
  remat_status spill_or_prefetch(const OpCall& call, bool spill, ErrorBuffer* err);
  remat_status retire(int slot, bool block, ErrorBuffer* err);

  DeviceChoice device_{};
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;       ///< Kernels, uploads, downloads.
  cl_command_queue copy_queue_ = nullptr;  ///< Spills and prefetches.
  cl_mem arena_ = nullptr;
  cl_mem persistent_ = nullptr;
  cl_mem state_ = nullptr;        ///< gpu::GpuState.
  cl_mem workspace_ = nullptr;    ///< Widening workspace (prepare()), or nullptr.
  uint64_t workspace_bytes_ = 0;  ///< Its size.
  uint8_t* host_ = nullptr;
  uint64_t host_bytes_ = 0;
  uint64_t arena_bytes_ = 0;       ///< Size of the arena region.
  uint64_t persistent_bytes_ = 0;  ///< Size of the persistent region.
  gpu::HostStaging staging_;       ///< The all-reduce buckets' host slots (prepare()).
  cl_program program_ = nullptr;
  cl_kernel kernels_[gpu::kKernelCount] = {};
  size_t local_[gpu::kKernelCount] = {};
  // The argument list being built (gpu::Launcher::begin): kernel, next index, first failure.
  gpu::KernelId arg_kernel_ = gpu::kKernel_set_step;
  cl_uint arg_index_ = 0;
  cl_int arg_status_ = CL_SUCCESS;
  bool step_set_ = false;  ///< state_ holds |step_|'s seed and step.
  StepContext step_ = {0, 0};
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
