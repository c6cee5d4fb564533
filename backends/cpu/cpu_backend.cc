// The CPU backend: regions are host memory, ops are calls to the kernels of this folder.
#include "backends/cpu/cpu_profile.h"
#include <new>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/widening.h"
#include "runtime/backend.h"
#include "runtime/port.h"

namespace remat {
namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const RegionSetup& regions, void* scratch, PortTeam* team, uint32_t threads)
      : scratch_(scratch), team_(team), threads_(threads) {
    base_[0] = static_cast<uint8_t*>(regions.arena);
    base_[1] = static_cast<uint8_t*>(regions.persistent);
    base_[2] = static_cast<uint8_t*>(regions.host);
    size_[0] = regions.arena_bytes;
    size_[1] = regions.persistent_bytes;
    size_[2] = regions.host != nullptr ? regions.host_bytes : 0;
  }

  ~CpuBackend() override {
    port_team_destroy(team_);
    port_free(scratch_);
    port_free(workspace_);
    port_free(strips_);
  }

  const DeviceProfile& profile() const override { return kCpuProfile; }

  bool supports_op(uint16_t code) const override { return cpu::kernel_for(code) != nullptr; }

  // The widening workspace: the most any op needs; and the threads' strips (cpu::strip_bytes)
  // where an op uses them (cpu::uses_strips). Nothing for a plan without 16-bit tensors. A second
  // call (tests that run ops one by one) grows the workspace when it needs more.
  remat_status prepare(const OpCall* calls, uint32_t count, ErrorBuffer* err) override {
    if (!kBuildHalfFloats) return REMAT_OK;  // the session refused 16-bit tensors
    uint64_t needed = 0;
    bool strips = false;
    for (uint32_t i = 0; i < count; ++i) {
      const uint64_t bytes = cpu::cpu_widening_bytes(calls[i]);
      needed = bytes > needed ? bytes : needed;
      strips = strips || cpu::uses_strips(calls[i]);
    }
    if (strips && strips_ == nullptr) {
      strips_ = static_cast<float*>(port_alloc(cpu::strip_bytes(threads_), 64));
      if (strips_ == nullptr) {
        return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED,
                         "cpu backend: no memory for the float32 strips of its %u threads "
                         "(%zu bytes), through which 16-bit products and layer norms go",
                         static_cast<unsigned>(threads_), cpu::strip_bytes(threads_));
      }
    }
    if (needed <= workspace_bytes_) return REMAT_OK;
    void* workspace =
        needed <= SIZE_MAX ? port_alloc(static_cast<size_t>(needed), kWideningAlignment) : nullptr;
    if (workspace == nullptr) {
      return set_error(
          err, REMAT_ERROR_RESOURCE_EXHAUSTED,
          "cpu backend: no memory for the %llu bytes its ops widen 16-bit tensors into",
          static_cast<unsigned long long>(needed));
    }
    port_free(workspace_);
    workspace_ = workspace;
    workspace_bytes_ = needed;
    return REMAT_OK;
  }

  uint64_t workspace_bytes() const override { return workspace_bytes_; }

  remat_status run_op(const OpCall& call, const StepContext& ctx, ErrorBuffer* err) override {
    cpu::KernelArgs args{};
    args.call = &call;
    for (int i = 0; i < call.num_inputs; ++i) args.in[i] = address(*call.inputs[i]);
    for (int i = 0; i < call.num_outputs; ++i) args.out[i] = address(*call.outputs[i]);
    args.ctx = &ctx;
    args.err = err;
    args.scratch = scratch_;
    args.team = team_;
    args.threads = threads_;
    if (!kBuildHalfFloats || !runs_widened(call)) return cpu::kernel_for(call.code)(args);
    const uint64_t needed = cpu::cpu_widening_bytes(call);
    if (needed > workspace_bytes_) {
      return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                       "op %u (%s): widening its 16-bit tensors needs %llu bytes of workspace, "
                       "prepare() gave %llu",
                       static_cast<unsigned>(call.index), op_name(call.code),
                       static_cast<unsigned long long>(needed),
                       static_cast<unsigned long long>(workspace_bytes_));
    }
    if (strips_ == nullptr && cpu::uses_strips(call)) {
      return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                       "op %u (%s): its 16-bit rows go through the threads' strips, and prepare() "
                       "was given no op that uses them",
                       static_cast<unsigned>(call.index), op_name(call.code));
    }
    args.strips = strips_;
    return cpu::run_widened(cpu::kernel_for(call.code), args, workspace_);
  }

  remat_status upload(Region region, uint64_t offset, const void* src, uint64_t bytes,
                      ErrorBuffer* err) override {
    const remat_status s = check_region(region, offset, bytes, "upload", err);
    if (s != REMAT_OK || bytes == 0) return s;
    memcpy(base_[static_cast<int>(region)] + offset, src, bytes);
    return REMAT_OK;
  }

  remat_status download(Region region, uint64_t offset, void* dst, uint64_t bytes,
                        ErrorBuffer* err) override {
    const remat_status s = check_region(region, offset, bytes, "download", err);
    if (s != REMAT_OK || bytes == 0) return s;
    memcpy(dst, base_[static_cast<int>(region)] + offset, bytes);
    return REMAT_OK;
  }

 private:
  // REMAT_ERROR_OUT_OF_REGION, naming the copy, unless |bytes| at |offset| lie in |region|.
  remat_status check_region(Region region, uint64_t offset, uint64_t bytes, const char* what,
                            ErrorBuffer* err) const {
    const int r = static_cast<int>(region);
    if (r >= 0 && r <= 2 && offset <= size_[r] && bytes <= size_[r] - offset) return REMAT_OK;
    return set_error(err, REMAT_ERROR_OUT_OF_REGION,
                     "cpu %s: %llu bytes at offset %llu of region %d (%llu bytes)", what,
                     static_cast<unsigned long long>(bytes),
                     static_cast<unsigned long long>(offset), r,
                     static_cast<unsigned long long>(r >= 0 && r <= 2 ? size_[r] : 0));
  }

  void* address(const TensorRef& t) const { return base_[static_cast<int>(t.region)] + t.offset; }

  uint8_t* base_[3];
  uint64_t size_[3];              // bytes of each region (0: none)
  void* scratch_;                 // kernel scratch (cpu::scratch_bytes(threads_)), owned
  void* workspace_ = nullptr;     // widening workspace (prepare()), owned
  uint64_t workspace_bytes_ = 0;  // its size
  float* strips_ = nullptr;       // the threads' strips (prepare(), 16-bit plans), owned
  PortTeam* team_;                // owned; nullptr with one thread
  uint32_t threads_;              // 1 or team_'s threads
};

}  // namespace

remat_status create_cpu_backend(const char* device, const RegionSetup& regions,
                                Backend** out_backend, ErrorBuffer* err) {
  if (device[0] != '\0' && strcmp(device, "0") != 0) {
    return set_error(err, REMAT_ERROR_UNAVAILABLE, "cpu backend has one device, 0; got '%s'",
                     device);
  }
  if (regions.arena == nullptr || regions.persistent == nullptr) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "cpu backend needs host arena and persistent regions");
  }
  const uint32_t threads = regions.threads > 0 ? regions.threads : port_hardware_threads();
  PortTeam* team = nullptr;
  if (threads > 1) {
    team = port_team_create(threads);
    if (team == nullptr) {
      return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED,
                       "cpu backend could not start %u threads", static_cast<unsigned>(threads));
    }
  }
  void* memory = port_alloc(sizeof(CpuBackend), alignof(CpuBackend));
  void* scratch = port_alloc(cpu::scratch_bytes(threads), 64);
  if (memory == nullptr || scratch == nullptr) {
    port_free(memory);
    port_free(scratch);
    port_team_destroy(team);
    return set_error(err, REMAT_ERROR_RESOURCE_EXHAUSTED, "no memory for the cpu backend");
  }
  cpu::gemm_on_calling_thread();
  *out_backend = new (memory) CpuBackend(regions, scratch, team, threads);
  return REMAT_OK;
}

// One device, always there: the host.
int list_cpu_devices(char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return -1;
  const char* matmul = cpu::matmul_engine();
  const char* bf16 = cpu::bf16_gemm_engine();
  snprintf(out, capacity,
           "cpu:0  host CPU, %u hardware threads (the caller's memory; matmul: %s; bf16 matmul: "
           "%s; convolutions: packed GEMM, %s)\n",
           static_cast<unsigned>(port_hardware_threads()), matmul,
           bf16 != nullptr ? bf16 : "widened to float32", cpu::packed_gemm_isa());
  return 1;
}

}  // namespace remat
