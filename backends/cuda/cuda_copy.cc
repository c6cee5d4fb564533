// Spill and prefetch on the copy stream, with events so that compute waits only where it must:
//
//   main_:  ... producer --(fork_)--.            first reader waits (kWait) on done
//   copy_:                           `-> memcpy -> record done ---------^
//
// A copy starts after every op issued before it on main_ (fork_), so a spill reads its
// finished source and a prefetch never overwrites bytes an earlier op still reads. Compute
// waits for a copy at the plan's kWait, or earlier if an op writes the copy's device range, or
// reads the range a prefetch is writing, before that (a hazard check, so a spilled tensor's
// arena bytes are reused only after its copy finished even if a plan had no wait there). Ops
// that only read a tensor being spilled run beside the copy: that overlap is what the
// compiler's cost model counts on (src/compiler/strategies/copy_timeline.h). At the end of a step
// copy_ joins main_.
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_backend_impl.h"
#include "plan/ops.h"

namespace remat {
namespace cuda {
namespace {

remat_status copy_error(const OpCall& call, cudaError_t e, const char* what, ErrorBuffer* err) {
  return set_error(err, REMAT_ERROR_INTERNAL, "op %u (%s): %s failed: %s (%s)", call.index,
                   op_name(call.code), what, cudaGetErrorName(e), cudaGetErrorString(e));
}

bool overlaps(const PendingCopy& p, const TensorRef& t) {
  return p.region == t.region && p.offset < t.offset + t.bytes && t.offset < p.offset + p.bytes;
}

}  // namespace

remat_status CudaBackend::read_to_host(const TensorRef& t, void* host, const OpCall& call,
                                       ErrorBuffer* err) {
  const cudaError_t e = cudaMemcpyAsync(host, address(t), static_cast<size_t>(t.numel) * 4,
                                        cudaMemcpyDeviceToHost, main_);
  return e == cudaSuccess ? REMAT_OK : copy_error(call, e, "cudaMemcpyAsync (to host)", err);
}

remat_status CudaBackend::write_from_host(const TensorRef& t, const void* host, const OpCall& call,
                                          ErrorBuffer* err) {
  const cudaError_t e = cudaMemcpyAsync(address(t), host, static_cast<size_t>(t.numel) * 4,
                                        cudaMemcpyHostToDevice, main_);
  return e == cudaSuccess ? REMAT_OK : copy_error(call, e, "cudaMemcpyAsync (from host)", err);
}

remat_status CudaBackend::finish_host_copies(const OpCall& call, ErrorBuffer* err) {
  const cudaError_t e = cudaStreamSynchronize(main_);
  return e == cudaSuccess ? REMAT_OK : copy_error(call, e, "cudaStreamSynchronize", err);
}

remat_status CudaBackend::copy_async(const OpCall& call, const TensorRef& device_tensor, void* dst,
                                     const void* src, cudaMemcpyKind kind, ErrorBuffer* err) {
  const size_t bytes = static_cast<size_t>(device_tensor.bytes);
  if (bytes == 0) return REMAT_OK;
  // A free slot, or the oldest copy waited for and its slot reused.
  PendingCopy* slot = nullptr;
  for (PendingCopy& p : pending_) {
    if (!p.busy) {
      slot = &p;
      break;
    }
    if (slot == nullptr || p.sequence < slot->sequence) slot = &p;
  }
  cudaError_t e = cudaSuccess;
  if (slot->busy) {
    e = cudaStreamWaitEvent(main_, slot->done, 0);
    if (e != cudaSuccess) return copy_error(call, e, "cudaStreamWaitEvent", err);
    slot->busy = false;
    --pending_busy_;
  }
  e = cudaEventRecord(fork_, main_);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(copy_, fork_, 0);
  if (e != cudaSuccess) return copy_error(call, e, "copy stream ordering", err);
  copies_in_step_ = true;
  e = cudaMemcpyAsync(dst, src, bytes, kind, copy_);
  if (e != cudaSuccess) return copy_error(call, e, "cudaMemcpyAsync", err);
  e = cudaEventRecord(slot->done, copy_);
  if (e != cudaSuccess) return copy_error(call, e, "cudaEventRecord", err);
  slot->region = device_tensor.region;
  slot->offset = device_tensor.offset;
  slot->bytes = device_tensor.bytes;
  slot->sequence = ++copy_sequence_;
  slot->writes_device = kind == cudaMemcpyHostToDevice;
  slot->busy = true;
  ++pending_busy_;
  return REMAT_OK;
}

remat_status CudaBackend::spill(const OpCall& call, ErrorBuffer* err) {
  const TensorRef& x = *call.inputs[0];
  const TensorRef& slot = *call.outputs[0];
  if (x.region == Region::kHost || slot.region != Region::kHost || x.bytes != slot.bytes) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (spill): needs a device tensor and a host slot of the same size",
                     call.index);
  }
  return copy_async(call, x, address(slot), address(x), cudaMemcpyDeviceToHost, err);
}

remat_status CudaBackend::prefetch(const OpCall& call, ErrorBuffer* err) {
  const TensorRef& slot = *call.inputs[0];
  const TensorRef& x = *call.outputs[0];
  if (x.region == Region::kHost || slot.region != Region::kHost || x.bytes != slot.bytes) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (prefetch): needs a host slot and a device tensor of the same size",
                     call.index);
  }
  return copy_async(call, x, address(x), address(slot), cudaMemcpyHostToDevice, err);
}

remat_status CudaBackend::wait(const OpCall& call, ErrorBuffer* err) {
  return wait_for_overlaps(call, *call.inputs[0], /*op_writes=*/true, err);
}

remat_status CudaBackend::wait_for_overlaps(const OpCall& call, const TensorRef& t, bool op_writes,
                                            ErrorBuffer* err) {
  for (PendingCopy& p : pending_) {
    if (pending_busy_ == 0) break;
    if (!p.busy || !overlaps(p, t) || (!op_writes && !p.writes_device)) continue;
    const cudaError_t e = cudaStreamWaitEvent(main_, p.done, 0);
    if (e != cudaSuccess) return copy_error(call, e, "cudaStreamWaitEvent", err);
    p.busy = false;
    --pending_busy_;
  }
  return REMAT_OK;
}

remat_status CudaBackend::wait_for_hazards(const OpCall& call, ErrorBuffer* err) {
  if (pending_busy_ == 0) return REMAT_OK;
  // allreduce_wait writes its inputs in place (the sums copied back, divided), and so may
  // allreduce_start: a device-memory communicator (NCCL) sums them in place from then on, so a
  // spill still reading one must finish first.
  const bool in_place = call.code == static_cast<uint16_t>(OpCode::kAllreduceWait) ||
                        call.code == static_cast<uint16_t>(OpCode::kAllreduceStart);
  for (int i = 0; i < call.num_inputs; ++i) {
    const remat_status s = wait_for_overlaps(call, *call.inputs[i], in_place, err);
    if (s != REMAT_OK) return s;
  }
  for (int i = 0; i < call.num_outputs; ++i) {
    const remat_status s = wait_for_overlaps(call, *call.outputs[i], /*op_writes=*/true, err);
    if (s != REMAT_OK) return s;
  }
  return REMAT_OK;
}

remat_status CudaBackend::join_copies(ErrorBuffer* err) {
  cudaError_t e = cudaEventRecord(join_, copy_);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(main_, join_, 0);
  if (e != cudaSuccess) {
    return set_error(err, REMAT_ERROR_INTERNAL, "cuda: joining the copy stream failed: %s (%s)",
                     cudaGetErrorName(e), cudaGetErrorString(e));
  }
  for (PendingCopy& p : pending_) p.busy = false;
  pending_busy_ = 0;
  copies_in_step_ = false;
  return REMAT_OK;
}

}  // namespace cuda
}  // namespace remat
