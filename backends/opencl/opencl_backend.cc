// The OpenCL backend: creation (the only place it allocates), the program of the shared GPU
// kernels, its side of gpu::Launcher, dispatch through the shared op table.
#include "backends/opencl/opencl_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>

#include "backends/gpu/ops/ops.h"
#include "backends/gpu/ops/widening.h"
#include "plan/ops.h"
#include "opencl_kernel_sources.h"
#include "runtime/port.h"

namespace remat {
namespace opencl {
namespace {

// Kernel function names, indexed by gpu::KernelId.
const char* const kKernelNames[gpu::kKernelCount] = {
#define REMAT_OPENCL_KERNEL_NAME(name) #name,
    REMAT_GPU_KERNELS(REMAT_OPENCL_KERNEL_NAME)
#undef REMAT_OPENCL_KERNEL_NAME
};

// Larger work-groups bring nothing to these 1-D launches and limit occupancy on GPUs; the
// kernel's own limit (CL_KERNEL_WORK_GROUP_SIZE) and the device's are applied below it.
constexpr size_t kMaxGroupSize = REMAT_GPU_GROUP_SIZE;

// gpu::GpuState, in a buffer of its own.
constexpr size_t kStateBytes = 64;
static_assert(sizeof(gpu::GpuState) <= kStateBytes, "the state buffer holds a GpuState");

// The report part of a clean gpu::GpuState, written before each checking op. Static: a
// non-blocking write may read it after the call that enqueued it returned.
const uint8_t* clean_report() {
  return reinterpret_cast<const uint8_t*>(&gpu::kCleanReport) + gpu::kReportOffset;
}
constexpr size_t kReportBytes = sizeof(gpu::GpuState) - gpu::kReportOffset;

size_t round_down_pow2(size_t v) {
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace

OpenclBackend::~OpenclBackend() {
  // Finish everything in flight before the buffers it uses go away (held-back copies of the
  // test mode are let go first, or they would never finish).
  for (PendingCopy& p : pending_) {
    if (p.used && p.gate != nullptr) {
      clSetUserEventStatus(p.gate, CL_COMPLETE);
      clReleaseEvent(p.gate);
      p.gate = nullptr;
    }
  }
  if (queue_ != nullptr) clFinish(queue_);
  if (copy_queue_ != nullptr) clFinish(copy_queue_);
  for (PendingCopy& p : pending_) {
    if (p.used) clReleaseEvent(p.done);
  }
  for (cl_kernel k : kernels_) {
    if (k != nullptr) clReleaseKernel(k);
  }
  if (program_ != nullptr) clReleaseProgram(program_);
  if (workspace_ != nullptr) clReleaseMemObject(workspace_);
  if (state_ != nullptr) clReleaseMemObject(state_);
  if (persistent_ != nullptr) clReleaseMemObject(persistent_);
  if (arena_ != nullptr) clReleaseMemObject(arena_);
  if (copy_queue_ != nullptr) clReleaseCommandQueue(copy_queue_);
  if (queue_ != nullptr) clReleaseCommandQueue(queue_);
  if (context_ != nullptr) clReleaseContext(context_);
}

remat_status OpenclBackend::init(const DeviceChoice& device, const RegionSetup& regions,
                                 ErrorBuffer* err) {
  device_ = device;
  host_ = static_cast<uint8_t*>(regions.host);
  host_bytes_ = regions.host != nullptr ? regions.host_bytes : 0;
  arena_bytes_ = regions.arena_bytes;
  persistent_bytes_ = regions.persistent_bytes;
  cl_int status = CL_SUCCESS;
  context_ = clCreateContext(nullptr, 1, &device.device, nullptr, nullptr, &status);
  if (status != CL_SUCCESS) return cl_fail(err, status, REMAT_ERROR_UNAVAILABLE, "clCreateContext");
  queue_ = clCreateCommandQueue(context_, device.device, 0, &status);
  if (status != CL_SUCCESS)
    return cl_fail(err, status, REMAT_ERROR_UNAVAILABLE, "clCreateCommandQueue");
  copy_queue_ = clCreateCommandQueue(context_, device.device, 0, &status);
  const char* delay = getenv("REMAT_TEST_DELAY_COPIES");
  delay_copies_ = delay != nullptr && delay[0] == '1';
  if (status != CL_SUCCESS)
    return cl_fail(err, status, REMAT_ERROR_UNAVAILABLE, "clCreateCommandQueue (copies)");

  cl_ulong max_alloc = 0;
  status = clGetDeviceInfo(device.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc),
                           &max_alloc, nullptr);
  if (status != CL_SUCCESS)
    return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clGetDeviceInfo(MAX_MEM_ALLOC_SIZE)");
  struct {
    const char* what;
    uint64_t bytes;
    cl_mem* out;
  } const buffers[] = {{"arena", regions.arena_bytes, &arena_},
                       {"persistent", regions.persistent_bytes, &persistent_},
                       {"state", kStateBytes, &state_}};
  for (const auto& b : buffers) {
    // An empty region still gets a small buffer: kernels are never given a null cl_mem.
    const uint64_t bytes = b.bytes > 0 ? b.bytes : 64;
    if (bytes > max_alloc) {
      return set_error(
          err, REMAT_ERROR_RESOURCE_EXHAUSTED,
          "opencl: the %s region needs %llu bytes; the device allocates at most %llu in one buffer",
          b.what, static_cast<unsigned long long>(bytes),
          static_cast<unsigned long long>(max_alloc));
    }
    *b.out = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &status);
    if (status != CL_SUCCESS) {
      return set_error(
          err,
          is_exhaustion(status) || status == CL_INVALID_BUFFER_SIZE ? REMAT_ERROR_RESOURCE_EXHAUSTED
                                                                    : REMAT_ERROR_INTERNAL,
          "opencl: could not allocate the %s region of %llu bytes: %s (%d)", b.what,
          static_cast<unsigned long long>(bytes), cl_error_name(status), static_cast<int>(status));
    }
    // Touching every byte makes the device commit the memory now (allocation is often lazy)
    // and gives the regions defined contents.
    const cl_uchar zero = 0;
    status = clEnqueueFillBuffer(queue_, *b.out, &zero, 1, 0, bytes, 0, nullptr, nullptr);
    if (status == CL_SUCCESS) status = clFinish(queue_);
    if (status != CL_SUCCESS) {
      return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED,
                       "opencl: could not commit the %s region of %llu bytes: %s (%d)", b.what,
                       static_cast<unsigned long long>(bytes), cl_error_name(status),
                       static_cast<int>(status));
    }
  }
  remat_status result = build_program(err);
  if (result == REMAT_OK) result = prepare_clblast(err);
  if (result != REMAT_OK) return result;
  // After the GEMM warm-up, which used the state buffer as scratch: no report yet.
  status = clEnqueueWriteBuffer(queue_, state_, CL_TRUE, gpu::kReportOffset, kReportBytes,
                                clean_report(), 0, nullptr, nullptr);
  return status == CL_SUCCESS
             ? REMAT_OK
             : cl_fail(err, status, REMAT_ERROR_INTERNAL, "clEnqueueWriteBuffer(state)");
}

remat_status OpenclBackend::build_program(ErrorBuffer* err) {
  cl_int status = CL_SUCCESS;
  program_ = clCreateProgramWithSource(context_, static_cast<cl_uint>(kKernelSourceCount),
                                       kKernelSources, nullptr, &status);
  if (status != CL_SUCCESS)
    return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clCreateProgramWithSource");
  // Correctly rounded division and sqrt, where the device offers them, keep results closer
  // to the CPU kernels (OpenCL C otherwise allows 2.5 ulp for division, 3 for sqrt).
  cl_device_fp_config fp = 0;
  clGetDeviceInfo(device_.device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr);
  const char* options = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
                            ? "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"
                            : "-cl-std=CL1.2";
  status = clBuildProgram(program_, 1, &device_.device, options, nullptr, nullptr);
  if (status != CL_SUCCESS) {
    // The start of the build log names the first error. OpenCL gives the log only whole.
    size_t log_size = 0;
    clGetProgramBuildInfo(program_, device_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
    char* log = static_cast<char*>(port_alloc(log_size + 1, 8));
    if (log != nullptr) {
      log[0] = '\0';
      clGetProgramBuildInfo(program_, device_.device, CL_PROGRAM_BUILD_LOG, log_size, log, nullptr);
      log[log_size] = '\0';
    }
    const char* start = log != nullptr ? log : "(no memory for the build log)";
    while (*start == '\n' || *start == ' ') ++start;
    set_error(err, REMAT_ERROR_INTERNAL, "opencl: clBuildProgram failed: %s (%d): %s",
              cl_error_name(status), static_cast<int>(status), start);
    port_free(log);
    return REMAT_ERROR_INTERNAL;
  }
  size_t device_max = 0;
  size_t item_sizes[3] = {0, 0, 0};
  cl_ulong local_mem = 0;
  clGetDeviceInfo(device_.device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(device_max), &device_max,
                  nullptr);
  clGetDeviceInfo(device_.device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(item_sizes), item_sizes,
                  nullptr);
  clGetDeviceInfo(device_.device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local_mem), &local_mem, nullptr);
  for (int id = 0; id < gpu::kKernelCount; ++id) {
    kernels_[id] = clCreateKernel(program_, kKernelNames[id], &status);
    if (status != CL_SUCCESS) {
      char what[96];
      snprintf(what, sizeof(what), "clCreateKernel(%s)", kKernelNames[id]);
      return cl_fail(err, status, REMAT_ERROR_INTERNAL, what);
    }
    size_t kernel_max = 0;
    status = clGetKernelWorkGroupInfo(kernels_[id], device_.device, CL_KERNEL_WORK_GROUP_SIZE,
                                      sizeof(kernel_max), &kernel_max, nullptr);
    if (status != CL_SUCCESS)
      return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clGetKernelWorkGroupInfo");
    size_t size = kernel_max < kMaxGroupSize ? kernel_max : kMaxGroupSize;
    if (device_max > 0 && size > device_max) size = device_max;
    if (item_sizes[0] > 0 && size > item_sizes[0]) size = item_sizes[0];
    // Reductions keep one 8-byte partial per work item in local memory.
    while (size > 1 && size * 8 > local_mem / 2) size /= 2;
    // A power of two: the reductions' tree needs it, the 1-D launches do not mind.
    local_[id] = round_down_pow2(size > 0 ? size : 1);
  }
  return REMAT_OK;
}

remat_status OpenclBackend::op_fail(const OpCall* call, cl_int status, const char* what,
                                    ErrorBuffer* err) const {
  const remat_status code =
      is_exhaustion(status) ? REMAT_ERROR_RESOURCE_EXHAUSTED : REMAT_ERROR_INTERNAL;
  if (call == nullptr) return cl_fail(err, status, code, what);
  return set_error(err, code, "op %u (%s): opencl: %s failed: %s (%d)", call->index,
                   op_name(call->code), what, cl_error_name(status), static_cast<int>(status));
}

void OpenclBackend::begin(gpu::KernelId id) {
  arg_kernel_ = id;
  arg_index_ = 0;
  arg_status_ = CL_SUCCESS;
}

void OpenclBackend::set_arg(size_t bytes, const void* value) {
  if (arg_status_ == CL_SUCCESS)
    arg_status_ = clSetKernelArg(kernels_[arg_kernel_], arg_index_, bytes, value);
  ++arg_index_;
}

void OpenclBackend::tensor(const TensorRef& t) {
  const cl_mem mem = buffer(t.region);
  const cl_ulong offset = t.offset;
  set_arg(sizeof(mem), &mem);
  set_arg(sizeof(offset), &offset);
}

remat_status OpenclBackend::enqueue(size_t global, size_t local, const OpCall* call,
                                    ErrorBuffer* err) {
  if (arg_status_ != CL_SUCCESS) return op_fail(call, arg_status_, "clSetKernelArg", err);
  const cl_int status = clEnqueueNDRangeKernel(queue_, kernels_[arg_kernel_], 1, nullptr, &global,
                                               &local, 0, nullptr, nullptr);
  return status == CL_SUCCESS ? REMAT_OK : op_fail(call, status, kKernelNames[arg_kernel_], err);
}

remat_status OpenclBackend::launch(size_t items, const OpCall* call, ErrorBuffer* err) {
  if (items == 0)
    return arg_status_ == CL_SUCCESS ? REMAT_OK : op_fail(call, arg_status_, "clSetKernelArg", err);
  const size_t local = local_[arg_kernel_];
  return enqueue((items + local - 1) / local * local, local, call, err);
}

remat_status OpenclBackend::launch_one_group(const OpCall* call, ErrorBuffer* err) {
  return enqueue(local_[arg_kernel_], local_[arg_kernel_], call, err);
}

remat_status OpenclBackend::zero(const TensorRef& t, const OpCall& call, ErrorBuffer* err) {
  if (t.bytes == 0) return REMAT_OK;
  const cl_uchar zero = 0;
  const cl_int status = clEnqueueFillBuffer(queue_, buffer(t.region), &zero, 1, t.offset, t.bytes,
                                            0, nullptr, nullptr);
  return status == CL_SUCCESS ? REMAT_OK : op_fail(&call, status, "clEnqueueFillBuffer", err);
}

remat_status OpenclBackend::copy(const TensorRef& src, const TensorRef& dst, const OpCall& call,
                                 ErrorBuffer* err) {
  const cl_int status = clEnqueueCopyBuffer(queue_, buffer(src.region), buffer(dst.region),
                                            src.offset, dst.offset, dst.bytes, 0, nullptr, nullptr);
  return status == CL_SUCCESS ? REMAT_OK : op_fail(&call, status, "clEnqueueCopyBuffer", err);
}

remat_status OpenclBackend::begin_check(const OpCall& call, ErrorBuffer* err) {
  const cl_int status = clEnqueueWriteBuffer(queue_, state_, CL_FALSE, gpu::kReportOffset,
                                             kReportBytes, clean_report(), 0, nullptr, nullptr);
  return status == CL_SUCCESS ? REMAT_OK
                              : op_fail(&call, status, "clEnqueueWriteBuffer(state)", err);
}

remat_status OpenclBackend::end_check(const OpCall& call, ErrorBuffer* err) {
  // Blocking: the step stops at the op that found bad data, as on the CPU.
  gpu::GpuState s = gpu::kCleanReport;
  const cl_int status =
      clEnqueueReadBuffer(queue_, state_, CL_TRUE, gpu::kReportOffset, kReportBytes,
                          reinterpret_cast<uint8_t*>(&s) + gpu::kReportOffset, 0, nullptr, nullptr);
  if (status != CL_SUCCESS) return op_fail(&call, status, "clEnqueueReadBuffer(state)", err);
  if (s.error == 0) return REMAT_OK;
  // Cleared at once too, so that no optimizer of a later step skips its update for it.
  begin_check(call, err);
  return gpu::report_error(s, err);
}

remat_status OpenclBackend::draw_init(const TensorRef& t, const InitDraw& d, ErrorBuffer* err) {
  return gpu::draw_init(*this, t, d, err);
}

bool OpenclBackend::supports_op(uint16_t code) const {
  return gpu::op_table().find(code) != nullptr;
}

remat_status OpenclBackend::prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err) {
  // A copy back from the old slots may still be queued (gpu::Launcher::write_from_host).
  const cl_int finished = clFinish(queue_);
  if (finished != CL_SUCCESS) return cl_fail(err, finished, REMAT_ERROR_INTERNAL, "clFinish");
  const remat_status staged = staging_.prepare(calls, count, err);
  if (staged != REMAT_OK) return staged;
  uint64_t needed = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t bytes = gpu::workspace_bytes(*this, calls[i]);
    needed = bytes > needed ? bytes : needed;
  }
  if (needed <= workspace_bytes_) return REMAT_OK;
  cl_ulong max_alloc = 0;
  cl_int status = clGetDeviceInfo(device_.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc),
                                  &max_alloc, nullptr);
  if (status != CL_SUCCESS)
    return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clGetDeviceInfo(MAX_MEM_ALLOC_SIZE)");
  if (needed > max_alloc) {
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED,
                     "opencl: the ops need %llu bytes of workspace; the device "
                     "allocates at most %llu in one buffer",
                     static_cast<unsigned long long>(needed),
                     static_cast<unsigned long long>(max_alloc));
  }
  cl_mem workspace = clCreateBuffer(context_, CL_MEM_READ_WRITE, needed, nullptr, &status);
  // Filled now, as the regions are: a device that allocates lazily fails here, not in a step.
  const cl_uchar zero = 0;
  if (status == CL_SUCCESS)
    status = clEnqueueFillBuffer(queue_, workspace, &zero, 1, 0, needed, 0, nullptr, nullptr);
  if (status == CL_SUCCESS) status = clFinish(queue_);
  if (status != CL_SUCCESS) {
    if (workspace != nullptr) clReleaseMemObject(workspace);
    return set_error(
        err,
        is_exhaustion(status) || status == CL_INVALID_BUFFER_SIZE ? REMAT_ERROR_RESOURCE_EXHAUSTED
                                                                  : REMAT_ERROR_INTERNAL,
        "opencl: could not allocate the workspace of %llu bytes: %s (%d)",
        static_cast<unsigned long long>(needed), cl_error_name(status), static_cast<int>(status));
  }
  if (workspace_ != nullptr) clReleaseMemObject(workspace_);
  workspace_ = workspace;
  workspace_bytes_ = needed;
  return REMAT_OK;
}

remat_status OpenclBackend::run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) {
  const gpu::Op op = gpu::op_table().find(call.code);
  if (op == nullptr) {
    return set_error(err, REMAT_ERROR_UNIMPLEMENTED,
                     "op %u (%s): not implemented by the opencl backend", call.index,
                     op_name(call.code));
  }
  if (!step_set_ || ctx.seed != step_.seed || ctx.step != step_.step) {
    const remat_status status = gpu::set_step(*this, ctx, err);
    if (status != REMAT_OK) return status;
    step_ = ctx;
    step_set_ = true;
  }
  if (gpu::widens(call)) return gpu::run_widened(*this, op, call, ctx, workspace_bytes_, err);
  return op(*this, call, ctx, err);
}

}  // namespace opencl

remat_status create_opencl_backend(const char* device, const RegionSetup& regions,
                                   Backend** out_backend, ErrorBuffer* err) {
  opencl::DeviceChoice choice{};
  const remat_status chosen = opencl::choose_device(device, &choice, err);
  if (chosen != REMAT_OK) return chosen;
  void* memory = port_alloc(sizeof(opencl::OpenclBackend), alignof(opencl::OpenclBackend));
  if (memory == nullptr)
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory for the opencl backend");
  opencl::OpenclBackend* backend = new (memory) opencl::OpenclBackend();
  const remat_status status = backend->init(choice, regions, err);
  if (status != REMAT_OK) {
    backend->~OpenclBackend();
    port_free(memory);
    return status;
  }
  *out_backend = backend;
  return REMAT_OK;
}

}  // namespace remat
