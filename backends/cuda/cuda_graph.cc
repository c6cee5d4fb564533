// The CUDA backend's step hooks (cuda_backend.h): the first step of a plan is captured as a
// CUDA graph, later steps replay it; a data-parallel plan's steps run eagerly.
#include <string.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_backend_impl.h"

namespace remat {
namespace cuda {

remat_status CudaBackend::begin_step(const StepContext& ctx, ErrorBuffer* err) {
  if (mode_ != Mode::kIdle) {
    return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                     "cuda begin_step: a step is already open");
  }
  remat_status s = cuda_status(cudaSetDevice(device_), "cudaSetDevice", err);
  if (s == REMAT_OK) s = set_step_state(ctx, err);  // Outside the graph: replays read it.
  // Copies issued before the step (ops run without hooks) must not be waited on inside a capture.
  if (s == REMAT_OK) s = join_copies(err);
  if (s != REMAT_OK) return s;
  ops_in_step_ = 0;
  fingerprint_ = 14695981039346656037ull;
  copies_in_step_ = false;
  if (graph_ != nullptr) {
    mode_ = Mode::kReplaying;
  } else if (graphs_enabled_ && !data_parallel_) {
    // A data-parallel plan's all-reduce ops wait for the host mid-step (gpu/ops/allreduce.cc):
    // its steps run eagerly.
    s = cuda_status(cudaStreamBeginCapture(main_, cudaStreamCaptureModeThreadLocal),
                    "cudaStreamBeginCapture", err);
    if (s != REMAT_OK) return s;
    mode_ = Mode::kCapturing;
  } else {
    mode_ = Mode::kEager;
  }
  return REMAT_OK;
}

void CudaBackend::attributes_changed() {
  if (graph_ != nullptr) cudaGraphExecDestroy(graph_);
  graph_ = nullptr;
}

remat_status CudaBackend::end_step(ErrorBuffer* err) {
  const Mode mode = mode_;
  switch (mode) {
    case Mode::kIdle:
      return set_error(err, REMAT_ERROR_FAILED_PRECONDITION, "cuda end_step: no step is open");
    case Mode::kEager: mode_ = Mode::kIdle; return join_copies(err);
    case Mode::kReplaying:
      mode_ = Mode::kIdle;
      if (ops_in_step_ != graph_ops_ || fingerprint_ != graph_fingerprint_) {
        return set_error(err, REMAT_ERROR_FAILED_PRECONDITION,
                         "cuda end_step: this step ran %u ops that differ from the %u captured",
                         ops_in_step_, graph_ops_);
      }
      break;
    case Mode::kCapturing: {
      remat_status s = copies_in_step_ ? join_copies(err) : REMAT_OK;
      if (s != REMAT_OK) return abort_capture(s);
      mode_ = Mode::kIdle;
      cudaGraph_t graph = nullptr;
      s = cuda_status(cudaStreamEndCapture(main_, &graph), "cudaStreamEndCapture", err);
      if (s == REMAT_OK)
        s = cuda_status(cudaGraphInstantiate(&graph_, graph, 0), "cudaGraphInstantiate", err);
      if (graph != nullptr) cudaGraphDestroy(graph);
      if (s != REMAT_OK) {
        graph_ = nullptr;
        return s;
      }
      graph_ops_ = ops_in_step_;
      graph_fingerprint_ = fingerprint_;
      break;
    }
  }
  const remat_status s = cuda_status(cudaGraphLaunch(graph_, main_), "cudaGraphLaunch", err);
  if (s == REMAT_OK && mode == Mode::kReplaying) ++replays_;
  return s;
}

remat_status CudaBackend::abort_capture(remat_status status) {
  // Rejoin the copy stream so that the capture can end, then drop what was captured.
  if (copies_in_step_) {
    cudaEventRecord(join_, copy_);
    cudaStreamWaitEvent(main_, join_, 0);
  }
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(main_, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();
  for (PendingCopy& p : pending_) p.busy = false;
  pending_busy_ = 0;
  mode_ = Mode::kIdle;
  return status;
}

}  // namespace cuda

// The hooks take a Backend* made by create_cuda_backend(); without RTTI the name is the check.
remat_status cuda_begin_step(Backend* backend, const StepContext& ctx, ErrorBuffer* err) {
  if (backend == nullptr || strcmp(backend->name(), "cuda") != 0) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT, "cuda_begin_step: not a cuda backend");
  }
  return static_cast<cuda::CudaBackend*>(backend)->begin_step(ctx, err);
}

remat_status cuda_end_step(Backend* backend, ErrorBuffer* err) {
  if (backend == nullptr || strcmp(backend->name(), "cuda") != 0) {
    return set_error(err, REMAT_ERROR_INVALID_ARGUMENT, "cuda_end_step: not a cuda backend");
  }
  return static_cast<cuda::CudaBackend*>(backend)->end_step(err);
}

uint64_t cuda_graph_replays(const Backend* backend) {
  if (backend == nullptr || strcmp(backend->name(), "cuda") != 0) return 0;
  return static_cast<const cuda::CudaBackend*>(backend)->graph_replays();
}

}  // namespace remat
