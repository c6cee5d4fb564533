// Data movement kernels: embedding lookup and its scatter-add gradient, permute, copy, select,
// concat and slice.
#include <string.h>

#include "backends/cpu/isa/half_span.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"
#include "plan/half_float.h"
#include "plan/op_subset.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {
namespace {

constexpr int kMaxPermuteRank = REMAT_MAX_RANK;

// Elements a thread's part of a permute copies at least.
constexpr int64_t kCopyGrain = 1 << 14;

// Element copy of |count| elements with a source stride, for one innermost permute run.
template <typename T>
void strided_copy(const unsigned char* src, int64_t src_stride, unsigned char* dst, int64_t count) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t i = 0; i < count; ++i) d[i] = s[i * src_stride];
}

// Negative axes are not part of the contract (op_catalogue.h): rejected like any other axis
// outside the shape.
remat_status bad_select(const KernelArgs& args, const char* name) {
  return set_error(args.err, REMAT_ERROR_OUT_OF_RANGE,
                   "op %u (%s): axis %lld / index %lld outside the input's shape",
                   static_cast<unsigned>(args.call->index), name,
                   static_cast<long long>(iattr(*args.call, attr::select::axis)),
                   static_cast<long long>(iattr(*args.call, attr::select::index)));
}

}  // namespace

// A 16-bit out of embedding is written as it is, each row rounded once from the table's
// (widening.h: writes_16_bit_output); a 16-bit dy of its gradient is read as it is, widened
// kRowChunk elements of a row at a time on the stack (reads_16_bit_input): the bits of the
// widened copies.
constexpr int64_t kRowChunk = 1024;

remat_status embedding(const KernelArgs& args) {
  const int32_t* __restrict ids = static_cast<const int32_t*>(args.in[0]);
  const float* __restrict table = in_f32(args, 1);
  const TensorRef& t = in_ref(args, 1);
  const int64_t h = last_dim(t);
  const int64_t vocab = h > 0 ? t.numel / h : 0;
  const int64_t count = in_ref(args, 0).numel;
  const uint8_t out_dtype = out_ref(args, 0).dtype;
  for (int64_t j = 0; j < count; ++j) {
    const int32_t id = ids[j];
    if (id < 0 || id >= vocab) {
      return set_error(args.err, REMAT_ERROR_OUT_OF_RANGE,
                       "op %u (embedding): id %d at position %lld outside [0, %lld)",
                       static_cast<unsigned>(args.call->index), static_cast<int>(id),
                       static_cast<long long>(j), static_cast<long long>(vocab));
    }
    if (kBuildHalfFloats && is_half_float(out_dtype)) {
      narrow_span(out_dtype, table + id * h, static_cast<uint16_t*>(args.out[0]) + j * h, h);
    } else {
      memcpy(out_f32(args, 0) + j * h, table + id * h, static_cast<size_t>(h) * sizeof(float));
    }
  }
  return REMAT_OK;
}

remat_status embedding_grad(const KernelArgs& args) {
  const int32_t* __restrict ids = static_cast<const int32_t*>(args.in[1]);
  float* __restrict dtable = out_f32(args, 0);
  const TensorRef& t = out_ref(args, 0);
  const int64_t h = last_dim(t);
  const int64_t vocab = h > 0 ? t.numel / h : 0;
  const int64_t count = in_ref(args, 1).numel;
  const uint8_t dy_dtype = in_ref(args, 0).dtype;
  memset(dtable, 0, static_cast<size_t>(t.numel) * sizeof(float));
  // Index order keeps repeated ids summing in a fixed order: deterministic.
  for (int64_t j = 0; j < count; ++j) {
    const int32_t id = ids[j];
    if (id < 0 || id >= vocab) {
      return set_error(args.err, REMAT_ERROR_OUT_OF_RANGE,
                       "op %u (embedding_grad): id %d at position %lld outside [0, %lld)",
                       static_cast<unsigned>(args.call->index), static_cast<int>(id),
                       static_cast<long long>(j), static_cast<long long>(vocab));
    }
    float* row = dtable + id * h;
    if (kBuildHalfFloats && is_half_float(dy_dtype)) {
      const uint16_t* dy = static_cast<const uint16_t*>(args.in[0]) + j * h;
      float chunk[kRowChunk];
      for (int64_t k0 = 0; k0 < h; k0 += kRowChunk) {
        const int64_t w = h - k0 < kRowChunk ? h - k0 : kRowChunk;
        widen_span(dy_dtype, dy + k0, chunk, w);
        for (int64_t k = 0; k < w; ++k) row[k0 + k] += chunk[k];
      }
    } else {
      const float* src = in_f32(args, 0) + j * h;
      for (int64_t k = 0; k < h; ++k) row[k] += src[k];
    }
  }
  return REMAT_OK;
}

remat_status permute(const KernelArgs& args) {
  const int64_t r = iattr(*args.call, attr::permute::rank);
  if (r < 1 || r > kMaxPermuteRank || args.call->num_iattrs < static_cast<uint32_t>(1 + 2 * r)) {
    return set_error(args.err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (permute): rank %lld needs %lld attributes, has %u",
                     static_cast<unsigned>(args.call->index), static_cast<long long>(r),
                     static_cast<long long>(1 + 2 * r),
                     static_cast<unsigned>(args.call->num_iattrs));
  }
  const int64_t* d = args.call->iattrs + attr::permute::dim(0);
  const int64_t* p = args.call->iattrs + attr::permute::perm(r, 0);
  // Input strides in elements, then each output axis's stride in the input.
  int64_t in_stride[kMaxPermuteRank], out_dim[kMaxPermuteRank], src_stride[kMaxPermuteRank];
  int64_t acc = 1;
  for (int64_t k = r - 1; k >= 0; --k) {
    in_stride[k] = acc;
    acc *= d[k];
  }
  for (int64_t k = 0; k < r; ++k) {
    if (p[k] < 0 || p[k] >= r) {
      return set_error(args.err, REMAT_ERROR_INVALID_ARGUMENT,
                       "op %u (permute): axis %lld of the permutation is %lld, outside [0, %lld)",
                       static_cast<unsigned>(args.call->index), static_cast<long long>(k),
                       static_cast<long long>(p[k]), static_cast<long long>(r));
    }
    out_dim[k] = d[p[k]];
    src_stride[k] = in_stride[p[k]];
  }
  if (acc != in_ref(args, 0).numel || acc != out_ref(args, 0).numel) {
    return set_error(args.err, REMAT_ERROR_INVALID_ARGUMENT,
                     "op %u (permute): attribute dims hold %lld elements, tensors %lld -> %lld",
                     static_cast<unsigned>(args.call->index), static_cast<long long>(acc),
                     static_cast<long long>(in_ref(args, 0).numel),
                     static_cast<long long>(out_ref(args, 0).numel));
  }
  const int64_t es = elem_bytes(in_ref(args, 0));
  const unsigned char* x = static_cast<const unsigned char*>(args.in[0]);
  unsigned char* y = static_cast<unsigned char*>(args.out[0]);
  const int64_t total = acc;
  const int64_t inner = out_dim[r - 1];
  if (total == 0 || inner == 0) return REMAT_OK;
  // Each thread walks its part of the output in order, one innermost run at a time, with an
  // odometer over the outer axes started at its first run.
  const bool contiguous = src_stride[r - 1] == 1;
  const int64_t runs = total / inner;
  const int64_t grain = inner < kCopyGrain ? kCopyGrain / inner : 1;
  parallel_for(args, runs, grain, [&](int64_t first, int64_t last, uint32_t) {
    int64_t idx[kMaxPermuteRank] = {0};
    int64_t src = 0;
    for (int64_t k = r - 2, rest = first; k >= 0; --k) {
      idx[k] = rest % out_dim[k];
      rest /= out_dim[k];
      src += idx[k] * src_stride[k];
    }
    for (int64_t run = first; run < last; ++run) {
      unsigned char* out = y + run * inner * es;
      const unsigned char* in = x + src * es;
      if (contiguous) {
        memcpy(out, in, static_cast<size_t>(inner * es));
      } else if (es == 4) {
        strided_copy<uint32_t>(in, src_stride[r - 1], out, inner);
      } else if (es == 2) {
        strided_copy<uint16_t>(in, src_stride[r - 1], out, inner);
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          memcpy(out + i * es, in + i * src_stride[r - 1] * es, static_cast<size_t>(es));
        }
      }
      for (int64_t k = r - 2; k >= 0; --k) {
        src += src_stride[k];
        if (++idx[k] < out_dim[k]) break;
        src -= src_stride[k] * out_dim[k];
        idx[k] = 0;
      }
    }
  });
  return REMAT_OK;
}

remat_status copy(const KernelArgs& args) {
  memcpy(args.out[0], args.in[0], static_cast<size_t>(out_ref(args, 0).bytes));
  return REMAT_OK;
}

remat_status select(const KernelArgs& args) {
  const SelectView v = select_view(*args.call, false);
  if (!v.valid) return bad_select(args, "select");
  const int64_t run = v.inner * v.elem_bytes;
  const unsigned char* src = static_cast<const unsigned char*>(args.in[0]) + v.index * run;
  unsigned char* dst = static_cast<unsigned char*>(args.out[0]);
  for (int64_t o = 0; o < v.outer; ++o) {
    memcpy(dst + o * run, src + o * v.n * run, static_cast<size_t>(run));
  }
  return REMAT_OK;
}

remat_status select_grad(const KernelArgs& args) {
  const SelectView v = select_view(*args.call, true);
  if (!v.valid) return bad_select(args, "select_grad");
  const int64_t run = v.inner * v.elem_bytes;
  memset(args.out[0], 0, static_cast<size_t>(out_ref(args, 0).bytes));
  const unsigned char* src = static_cast<const unsigned char*>(args.in[0]);
  unsigned char* dst = static_cast<unsigned char*>(args.out[0]) + v.index * run;
  for (int64_t o = 0; o < v.outer; ++o) {
    memcpy(dst + o * v.n * run, src + o * run, static_cast<size_t>(run));
  }
  return REMAT_OK;
}

remat_status concat(const KernelArgs& args) {
  const OpCall& call = *args.call;
  const TensorRef& y = out_ref(args, 0);
  const int64_t axis = iattr(call, attr::concat::axis);
  const AxisView out = axis_view(y.dims, y.rank, axis);
  const int64_t es = elem_bytes(y);
  unsigned char* dst = static_cast<unsigned char*>(args.out[0]);
  for (int64_t o = 0; o < out.outer; ++o) {
    for (uint32_t i = 0; i < call.num_inputs; ++i) {
      const TensorRef& x = in_ref(args, static_cast<int>(i));
      const size_t run = static_cast<size_t>(x.dims[axis] * out.inner * es);
      memcpy(dst, static_cast<const unsigned char*>(args.in[i]) + o * run, run);
      dst += run;
    }
  }
  return REMAT_OK;
}

remat_status slice(const KernelArgs& args) {
  const OpCall& call = *args.call;
  const TensorRef& x = in_ref(args, 0);
  const TensorRef& y = out_ref(args, 0);
  const int64_t axis = iattr(call, attr::slice::axis), offset = iattr(call, attr::slice::offset);
  const AxisView in = axis_view(x.dims, x.rank, axis);
  const int64_t m = y.dims[axis], es = elem_bytes(y);
  const unsigned char* src = static_cast<const unsigned char*>(args.in[0]);
  unsigned char* dst = static_cast<unsigned char*>(args.out[0]);
  for (int64_t o = 0; o < in.outer; ++o) {
    memcpy(dst + o * m * in.inner * es, src + (o * in.n + offset) * in.inner * es,
           static_cast<size_t>(m * in.inner * es));
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
