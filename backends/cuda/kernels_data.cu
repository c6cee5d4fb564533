// Data movement on the GPU: embedding lookup and its deterministic scatter-add gradient,
// permute, copy and select (the last two as strided async copies, no kernel).
#include "backends/cuda/cuda_common.cuh"

namespace remat {
namespace cuda {
namespace {

constexpr int kMaxPermuteRank = REMAT_MAX_RANK;

// A bad id writes zeros for its row and reports the error; memory is never read out of range.
__global__ void embedding_kernel(const int32_t* __restrict__ ids, const float* __restrict__ table,
                                 float* __restrict__ out, int64_t count, int64_t h, int64_t vocab,
                                 DeviceState* state, uint32_t op_index, uint32_t op_code) {
  const int64_t n = count * h;
  for (int64_t i = global_index(); i < n; i += global_stride()) {
    const int64_t j = i / h, k = i - j * h;
    const int32_t id = ids[j];
    if (id < 0 || id >= vocab) {
      if (k == 0) report_error(state, op_index, op_code, id, j, vocab);
      out[i] = 0.0f;
      continue;
    }
    out[i] = table[static_cast<int64_t>(id) * h + k];
  }
}

// dtable[ids[j], k] += dy[j, k] in index order, without atomics: thread (k, y) owns column k of
// the vocabulary rows [vlo, vhi) and walks every id in order, so each element's sum has the
// CPU kernel's order (the bits match it). dtable was zeroed before.
__global__ void embedding_grad_kernel(const float* __restrict__ dy, const int32_t* __restrict__ ids,
                                      float* __restrict__ dtable, int64_t count, int64_t h,
                                      int64_t vocab, DeviceState* state, uint32_t op_index,
                                      uint32_t op_code) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vlo = vocab * blockIdx.y / gridDim.y;
  const int64_t vhi = vocab * (blockIdx.y + 1) / gridDim.y;
  if (k >= h) return;
  for (int64_t j = 0; j < count; ++j) {
    const int32_t id = ids[j];
    if (id < 0 || id >= vocab) {
      if (k == 0 && blockIdx.y == 0) report_error(state, op_index, op_code, id, j, vocab);
      continue;
    }
    if (id >= vlo && id < vhi) dtable[static_cast<int64_t>(id) * h + k] += dy[j * h + k];
  }
}

struct PermuteShape {
  int rank;
  int64_t out_dim[kMaxPermuteRank];     // Output dims.
  int64_t src_stride[kMaxPermuteRank];  // Input stride (elements) of each output axis.
};

template <typename T>
__global__ void permute_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t total,
                               PermuteShape s) {
  for (int64_t i = global_index(); i < total; i += global_stride()) {
    int64_t rest = i, src = 0;
    for (int k = s.rank - 1; k >= 0; --k) {
      const int64_t q = rest / s.out_dim[k];
      src += (rest - q * s.out_dim[k]) * s.src_stride[k];
      rest = q;
    }
    y[i] = x[src];
  }
}

// Any element size: one byte per thread.
__global__ void permute_bytes_kernel(const unsigned char* __restrict__ x,
                                     unsigned char* __restrict__ y, int64_t total_bytes,
                                     int64_t es, PermuteShape s) {
  for (int64_t b = global_index(); b < total_bytes; b += global_stride()) {
    const int64_t i = b / es;
    int64_t rest = i, src = 0;
    for (int k = s.rank - 1; k >= 0; --k) {
      const int64_t q = rest / s.out_dim[k];
      src += (rest - q * s.out_dim[k]) * s.src_stride[k];
      rest = q;
    }
    y[b] = x[src * es + (b - i * es)];
  }
}

// Shape of x viewed as [outer, n, inner] around |axis|, as the CPU kernel.
bool select_view(const TensorRef& x, int64_t axis, int64_t* outer, int64_t* n, int64_t* inner) {
  if (axis < 0 || axis >= x.rank) return false;
  *outer = 1;
  *inner = 1;
  for (int64_t d = 0; d < axis; ++d) *outer *= x.dims[d];
  for (int64_t d = axis + 1; d < x.rank; ++d) *inner *= x.dims[d];
  *n = x.dims[axis];
  return true;
}

remat_status bad_select(const KernelArgs& a, const char* name, int64_t axis, int64_t index) {
  return set_error(a.err, REMAT_ERROR_OUT_OF_RANGE,
                   "op %u (%s): axis %lld / index %lld outside the input's shape", a.call->index,
                   name, static_cast<long long>(axis), static_cast<long long>(index));
}

}  // namespace

remat_status embedding(const KernelArgs& a) {
  const TensorRef& t = in_ref(a, 1);
  const int64_t h = last_dim(t);
  const int64_t vocab = h > 0 ? t.numel / h : 0;
  const int64_t count = in_ref(a, 0).numel;
  if (count == 0 || h == 0) return REMAT_OK;
  embedding_kernel<<<grid_for(count * h), kBlock, 0, a.stream>>>(
      static_cast<const int32_t*>(a.in[0]), static_cast<const float*>(a.in[1]),
      static_cast<float*>(a.out[0]), count, h, vocab, a.state, a.call->index, a.call->code);
  return check_cuda(a, cudaGetLastError(), "embedding kernel");
}

remat_status embedding_grad(const KernelArgs& a) {
  const TensorRef& t = out_ref(a, 0);
  const int64_t h = last_dim(t);
  const int64_t vocab = h > 0 ? t.numel / h : 0;
  const int64_t count = in_ref(a, 1).numel;
  remat_status status =
      check_cuda(a, cudaMemsetAsync(a.out[0], 0, static_cast<size_t>(t.bytes), a.stream),
                 "embedding_grad memset");
  if (status != REMAT_OK || count == 0 || h == 0 || vocab == 0) return status;
  // About 64K threads in all: vocabulary slices times column blocks.
  const int64_t col_blocks = (h + kBlock - 1) / kBlock;
  int64_t slices = 256 / col_blocks;
  slices = slices < 1 ? 1 : (slices > vocab ? vocab : slices);
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(slices));
  embedding_grad_kernel<<<grid, kBlock, 0, a.stream>>>(
      static_cast<const float*>(a.in[0]), static_cast<const int32_t*>(a.in[1]),
      static_cast<float*>(a.out[0]), count, h, vocab, a.state, a.call->index, a.call->code);
  return check_cuda(a, cudaGetLastError(), "embedding_grad kernel");
}

remat_status permute(const KernelArgs& a) {
  const int64_t r = iattr(a, 0, 0);
  if (r < 1 || r > kMaxPermuteRank || a.call->num_iattrs < static_cast<uint32_t>(1 + 2 * r)) {
    return set_error(a.err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (permute): rank %lld needs %lld attributes, has %u", a.call->index,
                     static_cast<long long>(r), static_cast<long long>(1 + 2 * r),
                     a.call->num_iattrs);
  }
  const int64_t* d = a.call->iattrs + 1;
  const int64_t* p = a.call->iattrs + 1 + r;
  int64_t in_stride[kMaxPermuteRank];
  int64_t acc = 1;
  for (int64_t k = r - 1; k >= 0; --k) {
    in_stride[k] = acc;
    acc *= d[k];
  }
  PermuteShape s{};
  s.rank = static_cast<int>(r);
  for (int64_t k = 0; k < r; ++k) {
    if (p[k] < 0 || p[k] >= r) {
      return set_error(a.err, REMAT_ERROR_INVALID_ARGUMENT,
                       "op %u (permute): axis %lld of the permutation is %lld, outside [0, %lld)",
                       a.call->index, static_cast<long long>(k), static_cast<long long>(p[k]),
                       static_cast<long long>(r));
    }
    s.out_dim[k] = d[p[k]];
    s.src_stride[k] = in_stride[p[k]];
  }
  if (acc != in_ref(a, 0).numel || acc != out_ref(a, 0).numel) {
    return set_error(a.err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (permute): attribute dims hold %lld elements, tensors %lld -> %lld",
                     a.call->index, static_cast<long long>(acc),
                     static_cast<long long>(in_ref(a, 0).numel),
                     static_cast<long long>(out_ref(a, 0).numel));
  }
  if (acc == 0) return REMAT_OK;
  const int64_t es = elem_bytes(in_ref(a, 0));
  if (es == 4) {
    permute_kernel<uint32_t><<<grid_for(acc), kBlock, 0, a.stream>>>(
        static_cast<const uint32_t*>(a.in[0]), static_cast<uint32_t*>(a.out[0]), acc, s);
  } else if (es == 2) {
    permute_kernel<uint16_t><<<grid_for(acc), kBlock, 0, a.stream>>>(
        static_cast<const uint16_t*>(a.in[0]), static_cast<uint16_t*>(a.out[0]), acc, s);
  } else {
    permute_bytes_kernel<<<grid_for(acc * es), kBlock, 0, a.stream>>>(
        static_cast<const unsigned char*>(a.in[0]), static_cast<unsigned char*>(a.out[0]),
        acc * es, es, s);
  }
  return check_cuda(a, cudaGetLastError(), "permute kernel");
}

remat_status copy(const KernelArgs& a) {
  const size_t bytes = static_cast<size_t>(out_ref(a, 0).bytes);
  if (bytes == 0) return REMAT_OK;
  return check_cuda(a, cudaMemcpyAsync(a.out[0], a.in[0], bytes, cudaMemcpyDeviceToDevice, a.stream),
                    "copy");
}

remat_status select(const KernelArgs& a) {
  const int64_t axis = iattr(a, 0, 0);
  const int64_t index = iattr(a, 1, 0);
  int64_t outer, n, inner;
  const TensorRef& x = in_ref(a, 0);
  if (!select_view(x, axis, &outer, &n, &inner) || index < 0 || index >= n) {
    return bad_select(a, "select", axis, index);
  }
  const size_t run = static_cast<size_t>(inner * elem_bytes(x));
  if (run == 0 || outer == 0) return REMAT_OK;
  // y[o, :] = x[o, index, :]: |outer| runs of |run| bytes, source pitch n * run.
  const unsigned char* src = static_cast<const unsigned char*>(a.in[0]) + index * run;
  return check_cuda(a,
                    cudaMemcpy2DAsync(a.out[0], run, src, static_cast<size_t>(n) * run, run,
                                      static_cast<size_t>(outer), cudaMemcpyDeviceToDevice,
                                      a.stream),
                    "select copy");
}

remat_status select_grad(const KernelArgs& a) {
  const int64_t axis = iattr(a, 0, 0);
  const int64_t index = iattr(a, 1, 0);
  int64_t outer, n, inner;
  const TensorRef& dx = out_ref(a, 0);
  if (!select_view(dx, axis, &outer, &n, &inner) || index < 0 || index >= n) {
    return bad_select(a, "select_grad", axis, index);
  }
  const size_t run = static_cast<size_t>(inner * elem_bytes(dx));
  remat_status status = check_cuda(
      a, cudaMemsetAsync(a.out[0], 0, static_cast<size_t>(dx.bytes), a.stream), "select_grad memset");
  if (status != REMAT_OK || run == 0 || outer == 0) return status;
  unsigned char* dst = static_cast<unsigned char*>(a.out[0]) + index * run;
  return check_cuda(a,
                    cudaMemcpy2DAsync(dst, static_cast<size_t>(n) * run, a.in[0], run, run,
                                      static_cast<size_t>(outer), cudaMemcpyDeviceToDevice,
                                      a.stream),
                    "select_grad copy");
}

}  // namespace cuda
}  // namespace remat
