// Host<->device copies: upload/download (blocking), the all-reduce buckets' host copies, and the
// asynchronous spill/prefetch/wait.
//
// Spills and prefetches run on the copy queue. Each starts after a marker of the compute queue
// (everything before it that produced or still reads the arena bytes has finished) and leaves
// an event; kWait makes the compute queue wait for that event with a barrier, so the host
// never blocks on a copy unless more than kMaxPendingCopies are in flight.
#include <string.h>

#include "backends/opencl/opencl_backend.h"
#include "plan/ops.h"

namespace remat {
namespace opencl {

remat_status OpenclBackend::check_region(Region region, uint64_t offset, uint64_t bytes,
                                         const char* what, ErrorBuffer* err) const {
  const uint64_t size = region_bytes(region);
  if (offset <= size && bytes <= size - offset) return REMAT_OK;
  return set_error(err, REMAT_ERROR_OUT_OF_REGION,
                   "opencl %s: %llu bytes at offset %llu of region %d (%llu bytes)", what,
                   static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(offset),
                   static_cast<int>(region), static_cast<unsigned long long>(size));
}

remat_status OpenclBackend::upload(Region region, uint64_t offset, const void* src, uint64_t bytes,
                                   ErrorBuffer* err) {
  const remat_status checked = check_region(region, offset, bytes, "upload", err);
  if (checked != REMAT_OK || bytes == 0) return checked;
  if (region == Region::kHost) {
    const cl_int status = clFinish(copy_queue_);
    if (status != CL_SUCCESS)
      return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clFinish(copy queue)");
    memcpy(host_ + offset, src, bytes);
    return REMAT_OK;
  }
  // Blocking: the caller's bytes may be gone when this returns.
  const cl_int status = clEnqueueWriteBuffer(queue_, buffer(region), CL_TRUE, offset, bytes, src, 0,
                                             nullptr, nullptr);
  return status == CL_SUCCESS
             ? REMAT_OK
             : cl_fail(err, status, REMAT_ERROR_INTERNAL, "clEnqueueWriteBuffer (upload)");
}

remat_status OpenclBackend::download(Region region, uint64_t offset, void* dst, uint64_t bytes,
                                     ErrorBuffer* err) {
  const remat_status checked = check_region(region, offset, bytes, "download", err);
  if (checked != REMAT_OK || bytes == 0) return checked;
  if (region == Region::kHost) {
    const cl_int status = clFinish(copy_queue_);
    if (status != CL_SUCCESS)
      return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clFinish(copy queue)");
    memcpy(dst, host_ + offset, bytes);
    return REMAT_OK;
  }
  // The compute queue is in order: this read sees every op enqueued before it.
  const cl_int status =
      clEnqueueReadBuffer(queue_, buffer(region), CL_TRUE, offset, bytes, dst, 0, nullptr, nullptr);
  return status == CL_SUCCESS
             ? REMAT_OK
             : cl_fail(err, status, REMAT_ERROR_INTERNAL, "clEnqueueReadBuffer (download)");
}

remat_status OpenclBackend::read_to_host(const TensorRef& t, void* host, const OpCall& call,
                                         ErrorBuffer* err) {
  // The compute queue is in order: the read sees every op enqueued before it.
  const cl_int status =
      clEnqueueReadBuffer(queue_, buffer(t.region), CL_FALSE, t.offset,
                          static_cast<size_t>(t.numel) * sizeof(float), host, 0, nullptr, nullptr);
  return status == CL_SUCCESS ? REMAT_OK : op_fail(&call, status, "clEnqueueReadBuffer", err);
}

remat_status OpenclBackend::write_from_host(const TensorRef& t, const void* host,
                                            const OpCall& call, ErrorBuffer* err) {
  const cl_int status =
      clEnqueueWriteBuffer(queue_, buffer(t.region), CL_FALSE, t.offset,
                           static_cast<size_t>(t.numel) * sizeof(float), host, 0, nullptr, nullptr);
  return status == CL_SUCCESS ? REMAT_OK : op_fail(&call, status, "clEnqueueWriteBuffer", err);
}

remat_status OpenclBackend::finish_host_copies(const OpCall& call, ErrorBuffer* err) {
  const cl_int status = clFinish(queue_);
  return status == CL_SUCCESS ? REMAT_OK : op_fail(&call, status, "clFinish", err);
}

// Lets a held-back copy (test mode) start.
static void open_gate(PendingCopy& p) {
  if (p.gate == nullptr) return;
  clSetUserEventStatus(p.gate, CL_COMPLETE);
  clReleaseEvent(p.gate);
  p.gate = nullptr;
}

remat_status OpenclBackend::sync(ErrorBuffer* err) {
  for (PendingCopy& p : pending_) {
    if (p.used) open_gate(p);
  }
  cl_int status = clFinish(queue_);
  if (status != CL_SUCCESS) return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clFinish");
  status = clFinish(copy_queue_);
  if (status != CL_SUCCESS)
    return cl_fail(err, status, REMAT_ERROR_INTERNAL, "clFinish(copy queue)");
  for (PendingCopy& p : pending_) {
    if (p.used) clReleaseEvent(p.done);
    p.used = false;
  }
  return REMAT_OK;
}

remat_status OpenclBackend::retire(int slot, bool block, ErrorBuffer* err) {
  PendingCopy& p = pending_[slot];
  // The copy queue is in order: a held-back copy issued before this one would hold it too (and
  // the compute queue behind it, until a blocking read never returns), so those go first.
  for (int i = 0; i < kMaxPendingCopies; ++i) {
    if (pending_[i].used && copy_order_[i] < copy_order_[slot]) open_gate(pending_[i]);
  }
  open_gate(p);
  const cl_int status = block ? clWaitForEvents(1, &p.done)
                              : clEnqueueBarrierWithWaitList(queue_, 1, &p.done, nullptr);
  clReleaseEvent(p.done);
  p.used = false;
  if (status != CL_SUCCESS) {
    return cl_fail(err, status, REMAT_ERROR_INTERNAL,
                   block ? "clWaitForEvents (copy)" : "clEnqueueBarrierWithWaitList");
  }
  return REMAT_OK;
}

remat_status OpenclBackend::spill_or_prefetch(const OpCall& call, bool spill, ErrorBuffer* err) {
  const TensorRef& src = *call.inputs[0];
  const TensorRef& dst = *call.outputs[0];
  const TensorRef& device = spill ? src : dst;
  const TensorRef& slot = spill ? dst : src;
  const uint64_t bytes = dst.bytes < src.bytes ? dst.bytes : src.bytes;
  if (slot.region != Region::kHost || device.region == Region::kHost || host_ == nullptr ||
      slot.offset > host_bytes_ || bytes > host_bytes_ - slot.offset) {
    return set_error(
        err, REMAT_ERROR_OUT_OF_REGION,
        "op %u (%s): needs a device tensor and a host slot inside the host region of %llu bytes",
        call.index, op_name(call.code), static_cast<unsigned long long>(host_bytes_));
  }
  if (bytes == 0) return REMAT_OK;
  // A free slot, or the oldest copy retired to make one.
  int free_slot = -1, oldest = 0;
  for (int i = 0; i < kMaxPendingCopies; ++i) {
    if (!pending_[i].used) {
      free_slot = i;
      break;
    }
    if (copy_order_[i] < copy_order_[oldest]) oldest = i;
  }
  if (free_slot < 0) {
    const remat_status status = retire(oldest, true, err);
    if (status != REMAT_OK) return status;
    free_slot = oldest;
  }
  cl_event after_compute = nullptr;
  cl_int status = clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &after_compute);
  if (status != CL_SUCCESS) return op_fail(&call, status, "clEnqueueMarkerWithWaitList", err);
  cl_event done = nullptr;
  cl_event gate = nullptr;
  if (delay_copies_) {
    gate = clCreateUserEvent(context_, &status);
    if (status != CL_SUCCESS) {
      clReleaseEvent(after_compute);
      return op_fail(&call, status, "clCreateUserEvent", err);
    }
  }
  const cl_event before[2] = {after_compute, gate};
  const cl_uint n_before = gate != nullptr ? 2 : 1;
  uint8_t* host = host_ + slot.offset;
  if (spill) {
    status = clEnqueueReadBuffer(copy_queue_, buffer(device.region), CL_FALSE, device.offset, bytes,
                                 host, n_before, before, &done);
  } else {
    status = clEnqueueWriteBuffer(copy_queue_, buffer(device.region), CL_FALSE, device.offset,
                                  bytes, host, n_before, before, &done);
  }
  clReleaseEvent(after_compute);
  if (status != CL_SUCCESS && gate != nullptr) {
    clSetUserEventStatus(gate, CL_COMPLETE);
    clReleaseEvent(gate);
    gate = nullptr;
  }
  if (status != CL_SUCCESS)
    return op_fail(&call, status,
                   spill ? "clEnqueueReadBuffer (spill)" : "clEnqueueWriteBuffer (prefetch)", err);
  // Start the copy now; the compute queue is flushed so that the marker can complete.
  status = clFlush(queue_);
  if (status == CL_SUCCESS) status = clFlush(copy_queue_);
  if (status != CL_SUCCESS) {
    if (gate != nullptr) {
      clSetUserEventStatus(gate, CL_COMPLETE);
      clReleaseEvent(gate);
    }
    clReleaseEvent(done);
    return op_fail(&call, status, "clFlush", err);
  }
  pending_[free_slot] =
      PendingCopy{true, src.region, dst.region, src.offset, dst.offset, done, gate};
  copy_order_[free_slot] = copies_issued_++;
  return REMAT_OK;
}

remat_status OpenclBackend::wait(const OpCall& call, ErrorBuffer* err) {
  if (call.num_inputs < 1) return REMAT_OK;
  const TensorRef& x = *call.inputs[0];
  for (int i = 0; i < kMaxPendingCopies; ++i) {
    const PendingCopy& p = pending_[i];
    if (!p.used) continue;
    const bool reads_x = p.src_region == x.region && p.src_offset == x.offset;
    const bool writes_x = p.dst_region == x.region && p.dst_offset == x.offset;
    if (!reads_x && !writes_x) continue;
    const remat_status status = retire(i, false, err);
    if (status != REMAT_OK) return status;
  }
  return REMAT_OK;
}

}  // namespace opencl
}  // namespace remat
