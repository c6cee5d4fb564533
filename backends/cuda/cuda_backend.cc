// The CUDA backend: device regions, the compute and copy streams, op dispatch, the step hooks
// with CUDA graph capture and replay, and the factory the registry calls.
#include "backends/cuda/cuda_backend.h"

#include <new>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_backend_impl.h"
#include "backends/gpu/ops/ops.h"
#include "backends/gpu/ops/widening.h"
#include "plan/ops.h"
#include "runtime/port.h"

namespace remat {
namespace cuda {
namespace {

// Kernel names for messages, indexed by gpu::KernelId.
const char* const kKernelNames[gpu::kKernelCount] = {
#define REMAT_CUDA_KERNEL_NAME(name) #name,
    REMAT_GPU_KERNELS(REMAT_CUDA_KERNEL_NAME)
#undef REMAT_CUDA_KERNEL_NAME
};

// Status for a failed allocation: out of memory is normal on a small device.
remat_status alloc_status(cudaError_t e, const char* what, uint64_t bytes, ErrorBuffer* err) {
  if (e == cudaSuccess) return REMAT_OK;
  cudaGetLastError();  // Allocation errors are not sticky; clear the last-error slot.
  const remat_status code =
      e == cudaErrorMemoryAllocation ? REMAT_ERROR_RESOURCE_EXHAUSTED : REMAT_ERROR_INTERNAL;
  return set_error(err, code, "cuda: could not allocate the %s of %llu bytes: %s (%s)", what,
                   static_cast<unsigned long long>(bytes), cudaGetErrorName(e),
                   cudaGetErrorString(e));
}

// No driver, no device, device busy: the backend is not available on this machine.
bool means_unavailable(cudaError_t e) {
  return e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice ||
         e == cudaErrorInvalidDevice || e == cudaErrorDevicesUnavailable ||
         e == cudaErrorStubLibrary || e == cudaErrorSystemDriverMismatch ||
         e == cudaErrorCompatNotSupportedOnDevice || e == cudaErrorInitializationError;
}

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

bool same_context(const StepContext& a, const StepContext& b) {
  return a.seed == b.seed && a.step == b.step;
}

// Spills, prefetches and waits order themselves against compute (cuda_copy.cc); every other
// op first waits for the pending copies it conflicts with.
bool copies_between_regions(uint16_t code) {
  return code == static_cast<uint16_t>(OpCode::kSpill) ||
         code == static_cast<uint16_t>(OpCode::kPrefetch) ||
         code == static_cast<uint16_t>(OpCode::kWait);
}

// The report part of a clean gpu::GpuState, copied over the device's to clear it.
const void* clean_report() {
  return reinterpret_cast<const uint8_t*>(&gpu::kCleanReport) + gpu::kReportOffset;
}
constexpr size_t kReportBytes = sizeof(gpu::GpuState) - gpu::kReportOffset;

}  // namespace

remat_status cuda_status(cudaError_t e, const char* what, ErrorBuffer* err, remat_status code) {
  if (e == cudaSuccess) return REMAT_OK;
  return set_error(err, code, "cuda: %s failed: %s (%s)", what, cudaGetErrorName(e),
                   cudaGetErrorString(e));
}

CudaBackend::CudaBackend(int device) : device_(device) {
  for (int i = 0; i < kMaxKernelArgs; ++i) arg_ptrs_[i] = &arg_values_[i];
}

CudaBackend::~CudaBackend() {
  // Nothing to report to here: statuses are ignored, every handle is released.
  cudaSetDevice(device_);
  if (mode_ == Mode::kCapturing) abort_capture(REMAT_OK);
  if (main_ != nullptr) cudaStreamSynchronize(main_);
  if (copy_ != nullptr) cudaStreamSynchronize(copy_);
  if (graph_ != nullptr) cudaGraphExecDestroy(graph_);
  if (blas_handle_ != nullptr) blas_.destroy(blas_handle_);
  for (PendingCopy& p : pending_) {
    if (p.done != nullptr) cudaEventDestroy(p.done);
  }
  if (fork_ != nullptr) cudaEventDestroy(fork_);
  if (join_ != nullptr) cudaEventDestroy(join_);
  if (copy_ != nullptr) cudaStreamDestroy(copy_);
  if (main_ != nullptr) cudaStreamDestroy(main_);
  cudaFree(base_[0]);
  cudaFree(base_[1]);
  cudaFree(base_[kWorkspace]);
  if (host_owned_) cudaFreeHost(base_[2]);
  if (host_registered_) cudaHostUnregister(base_[2]);
  if (staging_registered_) cudaHostUnregister(staging_.base());
  if (state_host_ != nullptr) cudaFreeHost(state_host_);
  cudaFree(state_);
  cudaFree(blas_workspace_);
}

remat_status CudaBackend::init(const RegionSetup& regions, ErrorBuffer* err) {
  remat_status s =
      cuda_status(cudaSetDevice(device_), "cudaSetDevice", err, REMAT_ERROR_UNAVAILABLE);
  if (s != REMAT_OK) return s;
  const char* graphs = getenv("REMAT_CUDA_GRAPHS");
  graphs_enabled_ = graphs == nullptr || strcmp(graphs, "0") != 0;

  // Device memory first: running out of it is the failure a user can act on.
  const char* names[2] = {"arena", "persistent region"};
  const uint64_t sizes[2] = {regions.arena_bytes, regions.persistent_bytes};
  for (int r = 0; r < 2; ++r) {
    size_[r] = sizes[r];
    if (sizes[r] == 0) continue;
    void* p = nullptr;
    s = alloc_status(cudaMalloc(&p, static_cast<size_t>(sizes[r])), names[r], sizes[r], err);
    if (s != REMAT_OK) return s;
    base_[r] = static_cast<uint8_t*>(p);
    if (regions.alignment != 0 && reinterpret_cast<uintptr_t>(p) % regions.alignment != 0) {
      return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                       "cuda: the plan's alignment %u exceeds what cudaMalloc gives (%p)",
                       regions.alignment, p);
    }
  }
  // The host region: the caller's buffer, page-locked in place so that spills and prefetches
  // are asynchronous and the slots hold the bytes where the caller put them; without a buffer
  // (or if it cannot be locked), a pinned buffer of the backend's own.
  size_[2] = regions.host_bytes;
  if (regions.host_bytes > 0 && regions.host != nullptr) {
    const cudaError_t e = cudaHostRegister(regions.host, static_cast<size_t>(regions.host_bytes),
                                           cudaHostRegisterDefault);
    if (e == cudaSuccess || e == cudaErrorHostMemoryAlreadyRegistered) {
      base_[2] = static_cast<uint8_t*>(regions.host);
      host_registered_ = e == cudaSuccess;
    }
    cudaGetLastError();
  }
  if (regions.host_bytes > 0 && base_[2] == nullptr) {
    void* p = nullptr;
    s = alloc_status(
        cudaHostAlloc(&p, static_cast<size_t>(regions.host_bytes), cudaHostAllocDefault),
        "pinned host region", regions.host_bytes, err);
    if (s != REMAT_OK) return s;
    base_[2] = static_cast<uint8_t*>(p);
    host_owned_ = true;
  }
  void* p = nullptr;
  s = alloc_status(cudaMalloc(&p, sizeof(gpu::GpuState)), "device state", sizeof(gpu::GpuState),
                   err);
  if (s != REMAT_OK) return s;
  state_ = static_cast<gpu::GpuState*>(p);
  s = alloc_status(cudaHostAlloc(&p, sizeof(gpu::GpuState), cudaHostAllocDefault), "state readback",
                   sizeof(gpu::GpuState), err);
  if (s != REMAT_OK) return s;
  state_host_ = static_cast<gpu::GpuState*>(p);
  s = alloc_status(cudaMalloc(&blas_workspace_, kCublasWorkspaceBytes), "cuBLAS workspace",
                   kCublasWorkspaceBytes, err);
  if (s != REMAT_OK) return s;

  s = cuda_status(cudaStreamCreateWithFlags(&main_, cudaStreamNonBlocking), "cudaStreamCreate",
                  err);
  if (s == REMAT_OK) {
    s = cuda_status(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "cudaStreamCreate",
                    err);
  }
  if (s == REMAT_OK)
    s = cuda_status(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreate",
                    err);
  if (s == REMAT_OK)
    s = cuda_status(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming), "cudaEventCreate",
                    err);
  for (int i = 0; s == REMAT_OK && i < kMaxPendingCopies; ++i) {
    s = cuda_status(cudaEventCreateWithFlags(&pending_[i].done, cudaEventDisableTiming),
                    "cudaEventCreate", err);
  }
  if (s == REMAT_OK) {
    s = cuda_status(cudaMemcpyAsync(state_, &gpu::kCleanReport, sizeof(gpu::GpuState),
                                    cudaMemcpyHostToDevice, main_),
                    "cudaMemcpyAsync (state)", err);
  }
  if (s == REMAT_OK) s = cuda_status(cudaStreamSynchronize(main_), "cudaStreamSynchronize", err);
  if (s != REMAT_OK) return s;

  // cuBLAS last: loading it is the slow part, and only a backend that will run pays it.
  s = load_cublas(&blas_, err);
  if (s != REMAT_OK) return s;
  cublasStatus_t b = blas_.create(&blas_handle_);
  if (b != CUBLAS_STATUS_SUCCESS) {
    blas_handle_ = nullptr;
    return set_error(err, REMAT_ERROR_UNAVAILABLE, "cuda: cublasCreate failed: %s",
                     blas_.status_name(b));
  }
  // Reproducible products: plain FP32 (TF32 only where the plan asks, per call: gemm()), no
  // atomics, a fixed stream and workspace (cublasSetStream resets the workspace, so it goes
  // first).
  tf32_ = regions.tf32_matmuls && profile().tf32_matmuls;
  device_memory_sums_ = regions.device_memory_sums;
  const char* step = "cublasSetStream";
  b = blas_.set_stream(blas_handle_, main_);
  if (b == CUBLAS_STATUS_SUCCESS) {
    step = "cublasSetWorkspace";
    b = blas_.set_workspace(blas_handle_, blas_workspace_, kCublasWorkspaceBytes);
  }
  if (b == CUBLAS_STATUS_SUCCESS) {
    step = "cublasSetMathMode";
    b = blas_.set_math_mode(blas_handle_, CUBLAS_DEFAULT_MATH);
  }
  if (b == CUBLAS_STATUS_SUCCESS) {
    step = "cublasSetAtomicsMode";
    b = blas_.set_atomics_mode(blas_handle_, CUBLAS_ATOMICS_NOT_ALLOWED);
  }
  if (b != CUBLAS_STATUS_SUCCESS) {
    return set_error(err, REMAT_ERROR_INTERNAL, "cuda: %s failed: %s", step, blas_.status_name(b));
  }
  return REMAT_OK;
}

bool CudaBackend::supports_op(uint16_t code) const { return gpu::op_table().find(code) != nullptr; }

remat_status CudaBackend::prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err) {
  remat_status s = cuda_status(cudaSetDevice(device_), "cudaSetDevice", err);
  if (s != REMAT_OK) return s;
  if (staging_registered_) {
    s = cuda_status(cudaStreamSynchronize(main_), "cudaStreamSynchronize", err);
    if (s != REMAT_OK) return s;  // A copy may still use the slots: keep them.
    cudaHostUnregister(staging_.base());
    staging_registered_ = false;
  }
  // Once all-reduce ops were prepared, no step is captured again (a backend driven op by op may
  // prepare other ops later, and still run these).
  for (uint32_t i = 0; i < count; ++i)
    data_parallel_ =
        data_parallel_ || calls[i].code == static_cast<uint16_t>(OpCode::kAllreduceStart);
  if (data_parallel_)
    attributes_changed();  // A graph captured before would not call the communicator.
  // A communicator of device memory takes the tensors themselves: no host slots then.
  s = staging_.prepare(calls, device_memory_sums_ ? 0 : count, err);
  if (s != REMAT_OK) return s;
  if (staging_.bytes() > 0) {
    // Page-locked, the buckets' copies run at the bus's speed; pageable ones still work.
    staging_registered_ =
        cudaHostRegister(staging_.base(), static_cast<size_t>(staging_.page_bytes()),
                         cudaHostRegisterDefault) == cudaSuccess;
    cudaGetLastError();
  }
  uint64_t needed = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t bytes = gpu::workspace_bytes(*this, calls[i]);
    needed = bytes > needed ? bytes : needed;
  }
  if (needed <= size_[kWorkspace]) return REMAT_OK;
  void* p = nullptr;
  s = alloc_status(cudaMalloc(&p, static_cast<size_t>(needed)), "workspace", needed, err);
  if (s != REMAT_OK) return s;
  attributes_changed();         // A captured graph would write the old workspace.
  cudaFree(base_[kWorkspace]);  // Synchronizes: no queued launch still uses it.
  base_[kWorkspace] = static_cast<uint8_t*>(p);
  size_[kWorkspace] = needed;
  return REMAT_OK;
}

remat_status CudaBackend::check_region(Region region, uint64_t offset, uint64_t bytes,
                                       const char* what, ErrorBuffer* err) const {
  const int r = static_cast<int>(region);
  if (r < 0 || r > 2 || offset > size_[r] || bytes > size_[r] - offset) {
    return set_error(err, REMAT_ERROR_OUT_OF_REGION,
                     "cuda %s: %llu bytes at offset %llu of region %d (%llu bytes)", what,
                     static_cast<unsigned long long>(bytes),
                     static_cast<unsigned long long>(offset), r,
                     static_cast<unsigned long long>(r >= 0 && r <= 2 ? size_[r] : 0));
  }
  if (mode_ == Mode::kCapturing || mode_ == Mode::kReplaying) {
    return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                     "cuda %s: not allowed between begin_step and end_step", what);
  }
  return REMAT_OK;
}

remat_status CudaBackend::upload(Region region, uint64_t offset, const void* src, uint64_t bytes,
                                 ErrorBuffer* err) {
  remat_status s = check_region(region, offset, bytes, "upload", err);
  if (s != REMAT_OK || bytes == 0) return s;
  s = cuda_status(cudaSetDevice(device_), "cudaSetDevice", err);
  if (s != REMAT_OK) return s;
  if (region == Region::kHost) {
    // The pinned host region may be read by a copy still in flight.
    s = cuda_status(cudaStreamSynchronize(copy_), "cudaStreamSynchronize", err);
    if (s == REMAT_OK) memcpy(address(region, offset), src, static_cast<size_t>(bytes));
    return s;
  }
  s = cuda_status(cudaMemcpyAsync(address(region, offset), src, static_cast<size_t>(bytes),
                                  cudaMemcpyHostToDevice, main_),
                  "upload cudaMemcpyAsync", err);
  if (s != REMAT_OK) return s;
  return cuda_status(cudaStreamSynchronize(main_), "upload cudaStreamSynchronize", err);
}

remat_status CudaBackend::download(Region region, uint64_t offset, void* dst, uint64_t bytes,
                                   ErrorBuffer* err) {
  remat_status s = check_region(region, offset, bytes, "download", err);
  if (s != REMAT_OK || bytes == 0) return s;
  s = cuda_status(cudaSetDevice(device_), "cudaSetDevice", err);
  if (s != REMAT_OK) return s;
  if (region == Region::kHost) {
    s = cuda_status(cudaStreamSynchronize(copy_), "cudaStreamSynchronize", err);
    if (s == REMAT_OK) memcpy(dst, address(region, offset), static_cast<size_t>(bytes));
    return s;
  }
  s = cuda_status(cudaMemcpyAsync(dst, address(region, offset), static_cast<size_t>(bytes),
                                  cudaMemcpyDeviceToHost, main_),
                  "download cudaMemcpyAsync", err);
  if (s != REMAT_OK) return s;
  return cuda_status(cudaStreamSynchronize(main_), "download cudaStreamSynchronize", err);
}

remat_status CudaBackend::draw_init(const TensorRef& t, const InitDraw& d, ErrorBuffer* err) {
  const remat_status s = cuda_status(cudaSetDevice(device_), "cudaSetDevice", err);
  return s == REMAT_OK ? gpu::draw_init(*this, t, d, err) : s;
}

remat_status CudaBackend::set_step_state(const StepContext& ctx, ErrorBuffer* err) {
  if (state_valid_ && same_context(ctx, step_ctx_)) return REMAT_OK;
  const remat_status s = gpu::set_step(*this, ctx, err);
  if (s != REMAT_OK) return s;
  step_ctx_ = ctx;
  state_valid_ = true;
  return REMAT_OK;
}

remat_status CudaBackend::run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) {
  if (mode_ == Mode::kCapturing || mode_ == Mode::kReplaying) {
    if (!same_context(ctx, step_ctx_)) {
      const remat_status s =
          set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                    "op %u (%s): step context (%llu, %llu) differs from begin_step's (%llu, %llu)",
                    call.index, op_name(call.code), static_cast<unsigned long long>(ctx.seed),
                    static_cast<unsigned long long>(ctx.step),
                    static_cast<unsigned long long>(step_ctx_.seed),
                    static_cast<unsigned long long>(step_ctx_.step));
      if (mode_ == Mode::kCapturing) return abort_capture(s);
      mode_ = Mode::kIdle;  // The replay is dropped: nothing of this step ran.
      return s;
    }
    ++ops_in_step_;
    fingerprint_ = mix(mix(fingerprint_, call.index), call.code);
    for (int i = 0; i < call.num_inputs; ++i)
      fingerprint_ = mix(fingerprint_, call.inputs[i]->offset);
    for (int i = 0; i < call.num_outputs; ++i)
      fingerprint_ = mix(fingerprint_, call.outputs[i]->offset);
    if (mode_ == Mode::kReplaying) return REMAT_OK;  // The graph runs it at end_step.
    const remat_status s = execute(call, ctx, err);
    return s == REMAT_OK ? s : abort_capture(s);
  }
  remat_status s = cuda_status(cudaSetDevice(device_), "cudaSetDevice", err);
  if (s == REMAT_OK) s = set_step_state(ctx, err);
  if (s == REMAT_OK) s = execute(call, ctx, err);
  return s;
}

remat_status CudaBackend::execute(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) {
  const gpu::Op op = gpu::op_table().find(call.code);
  if (op == nullptr) {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                     "op %u (%s): not implemented by the cuda backend", call.index,
                     op_name(call.code));
  }
  if (!copies_between_regions(call.code)) {
    // The call's own tensors, not their widened slices: copies touch plan regions only.
    const remat_status s = wait_for_hazards(call, err);
    if (s != REMAT_OK) return s;
  }
  if (gpu::widens(call)) return gpu::run_widened(*this, op, call, ctx, size_[kWorkspace], err);
  return op(*this, call, ctx, err);
}

remat_status CudaBackend::launch_status(const OpCall* call, cudaError_t e, const char* what,
                                        ErrorBuffer* err) const {
  if (e == cudaSuccess) return REMAT_OK;
  if (call == nullptr) return cuda_status(e, what, err);
  return set_error(err, REMAT_ERROR_INTERNAL, "op %u (%s): %s failed: %s (%s)", call->index,
                   op_name(call->code), what, cudaGetErrorName(e), cudaGetErrorString(e));
}

void CudaBackend::begin(gpu::KernelId id) {
  arg_kernel_ = id;
  arg_count_ = 0;
  arg_overflow_ = false;
  arg_shared_bytes_ = 0;
}

void CudaBackend::push_arg(const void* value, size_t bytes) {
  if (arg_count_ == kMaxKernelArgs || bytes > sizeof(uint64_t)) {
    arg_overflow_ = true;
    return;
  }
  arg_values_[arg_count_] = 0;
  memcpy(&arg_values_[arg_count_], value, bytes);
  ++arg_count_;
}

void CudaBackend::tensor(const TensorRef& t) {
  // (region base, byte offset), as OpenCL's (buffer, offset): the kernels add them.
  const uint8_t* base = base_[static_cast<int>(t.region)];
  push_arg(&base, sizeof(base));
  push_arg(&t.offset, sizeof(t.offset));
}

void CudaBackend::local(size_t bytes) {
  const uint64_t value = bytes;
  push_arg(&value, sizeof(value));
  arg_shared_bytes_ = bytes;
}

remat_status CudaBackend::launch_grid(unsigned blocks, const OpCall* call, ErrorBuffer* err) {
  const char* name = kKernelNames[arg_kernel_];
  if (arg_overflow_) {
    return set_error(err, REMAT_ERROR_INTERNAL, "cuda: kernel %s was given more than %d arguments",
                     name, kMaxKernelArgs);
  }
  return launch_status(call,
                       cudaLaunchKernel(kernel_address(arg_kernel_), dim3(blocks), dim3(kBlock),
                                        arg_ptrs_, arg_shared_bytes_, main_),
                       name, err);
}

remat_status CudaBackend::launch(size_t items, const OpCall* call, ErrorBuffer* err) {
  if (items == 0) return REMAT_OK;
  const size_t blocks = (items + kBlock - 1) / kBlock;
  if (blocks > 0x7fffffffu) {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                     "cuda: kernel %s over %zu items exceeds the grid", kKernelNames[arg_kernel_],
                     items);
  }
  return launch_grid(static_cast<unsigned>(blocks), call, err);
}

remat_status CudaBackend::launch_one_group(const OpCall* call, ErrorBuffer* err) {
  return launch_grid(1, call, err);
}

remat_status CudaBackend::zero(const TensorRef& t, const OpCall& call, ErrorBuffer* err) {
  if (t.bytes == 0) return REMAT_OK;
  return launch_status(&call, cudaMemsetAsync(address(t), 0, static_cast<size_t>(t.bytes), main_),
                       "cudaMemsetAsync", err);
}

remat_status CudaBackend::copy(const TensorRef& src, const TensorRef& dst, const OpCall& call,
                               ErrorBuffer* err) {
  return launch_status(&call,
                       cudaMemcpyAsync(address(dst), address(src), static_cast<size_t>(dst.bytes),
                                       cudaMemcpyDeviceToDevice, main_),
                       "cudaMemcpyAsync", err);
}

remat_status CudaBackend::sync(ErrorBuffer* err) {
  if (mode_ == Mode::kCapturing || mode_ == Mode::kReplaying) {
    const remat_status s = set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                                     "cuda sync: the step begun by begin_step was not ended");
    if (mode_ == Mode::kCapturing) return abort_capture(s);
    mode_ = Mode::kIdle;  // A replay that was never launched: nothing ran.
    return s;
  }
  mode_ = Mode::kIdle;
  remat_status s = cuda_status(cudaSetDevice(device_), "cudaSetDevice", err);
  if (s == REMAT_OK) s = join_copies(err);
  if (s == REMAT_OK) {
    s = cuda_status(
        cudaMemcpyAsync(state_host_, state_, sizeof(gpu::GpuState), cudaMemcpyDeviceToHost, main_),
        "error report cudaMemcpyAsync", err);
  }
  if (s == REMAT_OK) s = cuda_status(cudaStreamSynchronize(main_), "cudaStreamSynchronize", err);
  if (s == REMAT_OK) s = cuda_status(cudaStreamSynchronize(copy_), "cudaStreamSynchronize", err);
  if (s != REMAT_OK || state_host_->error == 0) return s;
  // A kernel found bad data: report it as the CPU kernels word it, then clear the report.
  s = gpu::report_error(*state_host_, err);
  // Clearing is best effort: if it fails, the next CUDA call reports the broken device.
  if (cudaMemcpyAsync(reinterpret_cast<uint8_t*>(state_) + gpu::kReportOffset, clean_report(),
                      kReportBytes, cudaMemcpyHostToDevice, main_) == cudaSuccess) {
    cudaStreamSynchronize(main_);
  }
  return s;
}

}  // namespace cuda

remat_status create_cuda_backend(const char* device, const RegionSetup& regions,
                                 Backend** out_backend, ErrorBuffer* err) {
  *out_backend = nullptr;
  char* end = nullptr;
  const long index = device[0] == '\0' ? 0 : strtol(device, &end, 10);
  if (device[0] != '\0' && (end == nullptr || *end != '\0' || index < 0 || index > 1023)) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE, "cuda: no device '%s' (devices are 0, 1, ...)",
                     device);
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return set_error(err,
                     cuda::means_unavailable(e) ? REMAT_ERROR_UNAVAILABLE : REMAT_ERROR_INTERNAL,
                     "cuda: no usable device: cudaGetDeviceCount failed: %s (%s)",
                     cudaGetErrorName(e), cudaGetErrorString(e));
  }
  if (index >= count) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE, "cuda: device %ld requested, %d present", index,
                     count);
  }
  void* memory = port_alloc(sizeof(cuda::CudaBackend), alignof(cuda::CudaBackend));
  if (memory == nullptr)
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory for the cuda backend");
  cuda::CudaBackend* backend = new (memory) cuda::CudaBackend(static_cast<int>(index));
  const remat_status s = backend->init(regions, err);
  if (s != REMAT_OK) {
    backend->~CudaBackend();
    port_free(memory);
    return s;
  }
  *out_backend = backend;
  return REMAT_OK;
}

}  // namespace remat
