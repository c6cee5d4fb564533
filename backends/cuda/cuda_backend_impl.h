// Private to the CUDA backend: the Backend subclass, shared by its .cc files. Ops are resolved
// through the GPU backends' shared table (backends/gpu/ops/ops.h), which marshals every
// kernel's arguments through this object's gpu::Launcher side (cudaLaunchKernel).
#ifndef REMAT_BACKENDS_CUDA_CUDA_BACKEND_IMPL_H_
#define REMAT_BACKENDS_CUDA_CUDA_BACKEND_IMPL_H_

#include "backends/cuda/cuda_profile.h"
#include <cuda_runtime_api.h>

#include "backends/cuda/cublas_loader.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/gpu/launcher.h"
#include "runtime/backend.h"

namespace remat {
namespace cuda {

/// REMAT_OK, or |code| with "cuda: <what> failed: <name> (<description>)" (cuda_backend.cc).
remat_status cuda_status(cudaError_t e, const char* what, ErrorBuffer* err,
                         remat_status code = REMAT_ERROR_INTERNAL);

/// Spills and prefetches whose completion no op has waited for yet, at most this many at once.
/// When all are in flight, the oldest is waited for (correct, only less overlap).
constexpr int kMaxPendingCopies = 256;

/// cuBLAS workspace set by the backend, so that captured GEMMs never allocate (32 MiB is
/// what cuBLAS recommends for Hopper; smaller GPUs use less of it).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

/// The index of the workspace in CudaBackend's region tables: gpu::kWorkspaceRegion.
constexpr int kWorkspace = static_cast<int>(gpu::kWorkspaceRegion);

/// Most arguments a kernel of backends/gpu/kernels may take: the most any takes today is 30
/// (attention_grad_probs), and a 16-bit tensor read as it is adds its dtype's; a launch past it
/// fails naming the kernel (OpenCL has no such cap, so PoCL cannot catch one).
constexpr int kMaxKernelArgs = 48;

/// One asynchronous copy on the copy stream: the device range it reads or writes and the event
/// recorded after it.
struct PendingCopy {
  cudaEvent_t done;
  Region region;
  uint64_t offset;
  uint64_t bytes;
  uint64_t sequence;   ///< Issue order, to find the oldest.
  bool writes_device;  ///< A prefetch (writes the device range); a spill only reads it.
  bool busy;
};

class CudaBackend final : public Backend, private gpu::Launcher {
 public:
  explicit CudaBackend(int device);
  ~CudaBackend() override;

  /// Allocates everything (regions, streams, events, cuBLAS); called once by the factory.
  remat_status init(const RegionSetup& regions, ErrorBuffer* err);

  const DeviceProfile& profile() const override { return kCudaProfile; }
  bool supports_op(uint16_t code) const override;
  /// Allocates the workspace (gpu::workspace_bytes: widening slices, attention scores): the most
  /// any of |calls| needs, nothing where none needs any. A later call with larger needs (tests
  /// running ops one by one) replaces it and drops a captured graph, whose launches hold the old
  /// address. Lays out the host slots of |calls|' all-reduce buckets (gpu::HostStaging),
  /// page-locked where the driver allows, replacing any earlier ones (none when the session's
  /// communicator sums in device memory); with all-reduce ops, a captured graph is dropped too and
  /// no step is captured again.
  remat_status prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err) override;
  uint64_t workspace_bytes() const override { return size_[kWorkspace]; }
  remat_status run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) override;
  remat_status upload(Region region, uint64_t offset, const void* src, uint64_t bytes,
                      ErrorBuffer* err) override;
  remat_status download(Region region, uint64_t offset, void* dst, uint64_t bytes,
                        ErrorBuffer* err) override;
  remat_status sync(ErrorBuffer* err) override;
  bool draws_init() const override { return true; }
  remat_status draw_init(const TensorRef& t, const InitDraw& d, ErrorBuffer* err) override;

  // The step hooks of Backend (see cuda_backend.h).
  remat_status begin_step(const StepContext& ctx, ErrorBuffer* err) override;
  remat_status end_step(ErrorBuffer* err) override;
  /// Drops the captured graph, whose launches hold the old attributes: the next step captures.
  void attributes_changed() override;
  uint64_t graph_replays() const { return replays_; }

 private:
  enum class Mode { kIdle, kEager, kCapturing, kReplaying };

  // cuda_backend.cc (abort_capture: cuda_graph.cc)
  remat_status execute(const OpCall& call, const StepContext& ctx, ErrorBuffer* err);
  remat_status set_step_state(const StepContext& ctx, ErrorBuffer* err);
  remat_status abort_capture(remat_status status);
  remat_status check_region(Region region, uint64_t offset, uint64_t bytes, const char* what,
                            ErrorBuffer* err) const;
  uint8_t* address(Region region, uint64_t offset) const {
    return base_[static_cast<int>(region)] + offset;
  }
  uint8_t* address(const TensorRef& t) const { return address(t.region, t.offset); }
  /// REMAT_OK, or REMAT_ERROR_INTERNAL naming op |call| (null: no op) and the CUDA error.
  remat_status launch_status(const OpCall* call, cudaError_t e, const char* what,
                             ErrorBuffer* err) const;
  void push_arg(const void* value, size_t bytes);
  remat_status launch_grid(unsigned blocks, const OpCall* call, ErrorBuffer* err);

  // gpu::Launcher (cuda_backend.cc): arguments gathered for cudaLaunchKernel on main_.
  void begin(gpu::KernelId id) override;
  void scalar(const void* value, size_t bytes) override { push_arg(value, bytes); }
  void tensor(const TensorRef& t) override;
  void state() override { push_arg(&state_, sizeof(state_)); }
  void local(size_t bytes) override;
  remat_status launch(size_t items, const OpCall* call, ErrorBuffer* err) override;
  remat_status launch_one_group(const OpCall* call, ErrorBuffer* err) override;
  size_t group_size(gpu::KernelId) const override { return kBlock; }
  remat_status zero(const TensorRef& t, const OpCall& call, ErrorBuffer* err) override;
  remat_status copy(const TensorRef& src, const TensorRef& dst, const OpCall& call,
                    ErrorBuffer* err) override;
  // A report stays on the device until sync(): a replayed graph cannot stop at the op.
  remat_status begin_check(const OpCall&, ErrorBuffer*) override { return REMAT_OK; }
  remat_status end_check(const OpCall&, ErrorBuffer*) override { return REMAT_OK; }

  // cuda_copy.cc
  remat_status spill(const OpCall& call, ErrorBuffer* err) override;
  remat_status prefetch(const OpCall& call, ErrorBuffer* err) override;
  remat_status wait(const OpCall& call, ErrorBuffer* err) override;
  const gpu::HostStaging& host_staging() const override { return staging_; }
  remat_status read_to_host(const TensorRef& t, void* host, const OpCall& call,
                            ErrorBuffer* err) override;
  remat_status write_from_host(const TensorRef& t, const void* host, const OpCall& call,
                               ErrorBuffer* err) override;
  remat_status finish_host_copies(const OpCall& call, ErrorBuffer* err) override;
  bool tensors_in_cuda_memory() const override { return true; }
  float* cuda_address(const TensorRef& t) const override {
    return reinterpret_cast<float*>(address(t));
  }
  remat_status copy_async(const OpCall& call, const TensorRef& device_tensor, void* dst,
                          const void* src, cudaMemcpyKind kind, ErrorBuffer* err);
  // Orders main_ after the pending copies that overlap |t|: every one when the op writes |t|,
  // only prefetches (copies that write the device) when it just reads |t|.
  remat_status wait_for_overlaps(const OpCall& call, const TensorRef& t, bool op_writes,
                                 ErrorBuffer* err);
  remat_status wait_for_hazards(const OpCall& call, ErrorBuffer* err);
  remat_status join_copies(ErrorBuffer* err);

  // cuda_matmul.cc
  remat_status matmul(const OpCall& call, bool accumulate, ErrorBuffer* err) override;
  remat_status head_matmul(const OpCall& call, ErrorBuffer* err) override;
  remat_status gemm(const gpu::GemmBatch& g, const OpCall& call, ErrorBuffer* err) override;
  uint64_t workspace_size() const override { return size_[kWorkspace]; }
  bool takes_half_operands(const OpCall& call) const override;
  // Column-major C = alpha * op(B) op(A) + beta * C (the operands in cuBLAS's order), one or a
  // strided batch: SGEMM for float32 operands (|ab| CUDA_R_32F), GemmEx with
  // CUBLAS_COMPUTE_32F_FAST_TF32 where |tf32| (tf32 plans), GemmEx accumulating in float32 for
  // 16-bit ones (|ab| CUDA_R_16BF or CUDA_R_16F). C is float32.
  cublasStatus_t gemm(cublasOperation_t op_b, cublasOperation_t op_a, int n, int m, int k,
                      const float* alpha, const void* b, int ldb, const void* a, int lda,
                      const float* beta, float* c, int ldc, cudaDataType ab, bool tf32);
  cublasStatus_t gemm_batched(cublasOperation_t op_b, cublasOperation_t op_a, int n, int m, int k,
                              const float* alpha, const void* b, int ldb, long long stride_b,
                              const void* a, int lda, long long stride_a, const float* beta,
                              float* c, int ldc, long long stride_c, int batch, cudaDataType ab,
                              bool tf32);

  int device_;
  // Arena, persistent (device), host (pinned), then the workspace (device, prepare()),
  // indexed by Region (the workspace by gpu::kWorkspaceRegion: kWorkspace).
  uint8_t* base_[kWorkspace + 1] = {nullptr, nullptr, nullptr, nullptr};
  uint64_t size_[kWorkspace + 1] = {0, 0, 0, 0};
  bool host_registered_ = false;     // base_[2] is the caller's buffer, page-locked by us.
  bool host_owned_ = false;          // base_[2] is our cudaHostAlloc buffer.
  gpu::HostStaging staging_;         // The all-reduce buckets' host slots (prepare()).
  bool staging_registered_ = false;  // staging_'s memory is page-locked by us.
  cudaStream_t main_ = nullptr;      // Kernels, GEMMs, uploads and downloads.
  cudaStream_t copy_ = nullptr;      // Spills and prefetches.
  cudaEvent_t fork_ = nullptr;       // main_ -> copy_ ordering before each copy.
  cudaEvent_t join_ = nullptr;       // copy_ -> main_ at the end of a step.
  PendingCopy pending_[kMaxPendingCopies] = {};
  int pending_busy_ = 0;
  uint64_t copy_sequence_ = 0;
  gpu::GpuState* state_ = nullptr;       // Device.
  gpu::GpuState* state_host_ = nullptr;  // Pinned, for reading the error report.
  void* blas_workspace_ = nullptr;
  Cublas blas_ = {};
  cublasHandle_t blas_handle_ = nullptr;
  bool tf32_ = false;  // The plan's matmul_precision is tf32 (RegionSetup::tf32_matmuls).
  bool device_memory_sums_ = false;  // RegionSetup::device_memory_sums: no host slots.
  bool data_parallel_ = false;       // All-reduce ops were prepared: no graph capture.

  // Step and graph state.
  Mode mode_ = Mode::kIdle;
  bool graphs_enabled_ = true;
  bool state_valid_ = false;  // state_ holds step_ctx_.
  StepContext step_ctx_ = {0, 0};
  bool copies_in_step_ = false;  // copy_ took part in this step (it must be joined).
  uint32_t ops_in_step_ = 0;
  uint64_t fingerprint_ = 0;  // Of the ops of this step, to check a replay matches.
  cudaGraphExec_t graph_ = nullptr;
  uint32_t graph_ops_ = 0;
  uint64_t graph_fingerprint_ = 0;
  uint64_t replays_ = 0;

  // The argument list being built (gpu::Launcher::begin); cudaLaunchKernel reads each
  // argument's bytes through arg_ptrs_, which point into arg_values_.
  gpu::KernelId arg_kernel_ = gpu::kKernel_set_step;
  int arg_count_ = 0;
  bool arg_overflow_ = false;
  size_t arg_shared_bytes_ = 0;
  uint64_t arg_values_[kMaxKernelArgs] = {};
  void* arg_ptrs_[kMaxKernelArgs] = {};
};

}  // namespace cuda
}  // namespace remat

#endif  // REMAT_BACKENDS_CUDA_CUDA_BACKEND_IMPL_H_
