// Pooling (max, average, global average) and spatial padding, with their gradients, over NCHW
// planes: every (n, c) plane is pooled on its own.
#include <math.h>
#include <string.h>

#include "backends/cpu/kernels_internal.h"
#include "plan/spatial_shape.h"

namespace remat {
namespace cpu {
namespace {

// A pooling op's planes: input (x or dx) and output (y or dy) sizes, and its attributes.
struct Pool {
  Nchw in;
  int64_t p, q;
  PoolAttrs a;
};

Pool pool_of(const OpCall& call, const TensorRef& x, const TensorRef& y) {
  const bool has_count = call.num_iattrs == 8;
  Pool pool{nchw_of(x.dims, x.rank), 0, 0, pool_attrs(call.iattrs, has_count)};
  const Nchw out = nchw_of(y.dims, y.rank);
  pool.p = out.h;
  pool.q = out.w;
  return pool;
}

PoolWindow rows_of_window(const Pool& pool, int64_t p) {
  return pool_window(p, pool.in.h, pool.a.kernel_h, pool.a.stride_h, pool.a.pad_h);
}
PoolWindow cols_of_window(const Pool& pool, int64_t q) {
  return pool_window(q, pool.in.w, pool.a.kernel_w, pool.a.stride_w, pool.a.pad_w);
}

// Index in |plane| of the window's maximum, as torch finds it: the first largest value in
// row-major order, or the last NaN.
int64_t argmax(const float* plane, int64_t width, const PoolWindow& rows, const PoolWindow& cols) {
  int64_t index = rows.start * width + cols.start;
  float best = -INFINITY;
  for (int64_t ih = rows.start; ih < rows.end; ++ih) {
    for (int64_t iw = cols.start; iw < cols.end; ++iw) {
      const float v = plane[ih * width + iw];
      if (v > best || isnan(v)) {
        best = v;
        index = ih * width + iw;
      }
    }
  }
  return index;
}

// The divisor of average window (rows, cols).
int64_t divisor(const Pool& pool, const PoolWindow& rows, const PoolWindow& cols) {
  return pool.a.count_include_pad ? rows.padded_len * cols.padded_len
                                  : (rows.end - rows.start) * (cols.end - cols.start);
}

// pad and pad_grad: the unpadded plane size and the padding.
struct Padding {
  Nchw small;
  int64_t top, left, big_h, big_w;
};

Padding padding_of(const OpCall& call, const TensorRef& small) {
  Padding pad{nchw_of(small.dims, small.rank), call.iattrs[0], call.iattrs[2], 0, 0};
  pad.big_h = pad.small.h + call.iattrs[0] + call.iattrs[1];
  pad.big_w = pad.small.w + call.iattrs[2] + call.iattrs[3];
  return pad;
}

}  // namespace

remat_status max_pool(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, in_ref(args, 0), out_ref(args, 0));
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  for (int64_t plane = 0; plane < pool.in.n * pool.in.c; ++plane) {
    const float* in = x + plane * pool.in.h * pool.in.w;
    float* out = y + plane * pool.p * pool.q;
    for (int64_t p = 0; p < pool.p; ++p) {
      const PoolWindow rows = rows_of_window(pool, p);
      for (int64_t q = 0; q < pool.q; ++q) {
        out[p * pool.q + q] = in[argmax(in, pool.in.w, rows, cols_of_window(pool, q))];
      }
    }
  }
  return REMAT_OK;
}

remat_status max_pool_grad(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, in_ref(args, 1), in_ref(args, 0));
  const float* dy = in_f32(args, 0);
  const float* x = in_f32(args, 1);
  float* dx = out_f32(args, 0);
  memset(dx, 0, static_cast<size_t>(out_ref(args, 0).numel) * sizeof(float));
  for (int64_t plane = 0; plane < pool.in.n * pool.in.c; ++plane) {
    const float* in = x + plane * pool.in.h * pool.in.w;
    float* din = dx + plane * pool.in.h * pool.in.w;
    const float* grad = dy + plane * pool.p * pool.q;
    for (int64_t p = 0; p < pool.p; ++p) {
      const PoolWindow rows = rows_of_window(pool, p);
      for (int64_t q = 0; q < pool.q; ++q) {
        din[argmax(in, pool.in.w, rows, cols_of_window(pool, q))] += grad[p * pool.q + q];
      }
    }
  }
  return REMAT_OK;
}

remat_status avg_pool(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, in_ref(args, 0), out_ref(args, 0));
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  for (int64_t plane = 0; plane < pool.in.n * pool.in.c; ++plane) {
    const float* in = x + plane * pool.in.h * pool.in.w;
    float* out = y + plane * pool.p * pool.q;
    for (int64_t p = 0; p < pool.p; ++p) {
      const PoolWindow rows = rows_of_window(pool, p);
      for (int64_t q = 0; q < pool.q; ++q) {
        const PoolWindow cols = cols_of_window(pool, q);
        double sum = 0.0;
        for (int64_t ih = rows.start; ih < rows.end; ++ih) {
          for (int64_t iw = cols.start; iw < cols.end; ++iw) sum += in[ih * pool.in.w + iw];
        }
        out[p * pool.q + q] = static_cast<float>(sum / static_cast<double>(divisor(pool, rows, cols)));
      }
    }
  }
  return REMAT_OK;
}

remat_status avg_pool_grad(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, out_ref(args, 0), in_ref(args, 0));
  const float* dy = in_f32(args, 0);
  float* dx = out_f32(args, 0);
  memset(dx, 0, static_cast<size_t>(out_ref(args, 0).numel) * sizeof(float));
  for (int64_t plane = 0; plane < pool.in.n * pool.in.c; ++plane) {
    float* din = dx + plane * pool.in.h * pool.in.w;
    const float* grad = dy + plane * pool.p * pool.q;
    for (int64_t p = 0; p < pool.p; ++p) {
      const PoolWindow rows = rows_of_window(pool, p);
      for (int64_t q = 0; q < pool.q; ++q) {
        const PoolWindow cols = cols_of_window(pool, q);
        const float g = grad[p * pool.q + q] / static_cast<float>(divisor(pool, rows, cols));
        for (int64_t ih = rows.start; ih < rows.end; ++ih) {
          for (int64_t iw = cols.start; iw < cols.end; ++iw) din[ih * pool.in.w + iw] += g;
        }
      }
    }
  }
  return REMAT_OK;
}

remat_status global_avg_pool(const KernelArgs& args) {
  const TensorRef& t = in_ref(args, 0);
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  const int64_t planes = t.dims[0] * t.dims[1];
  const int64_t size = planes > 0 ? t.numel / planes : 0;
  for (int64_t i = 0; i < planes; ++i) {
    double sum = 0.0;
    for (int64_t j = 0; j < size; ++j) sum += x[i * size + j];
    y[i] = static_cast<float>(sum / static_cast<double>(size));
  }
  return REMAT_OK;
}

remat_status global_avg_pool_grad(const KernelArgs& args) {
  const TensorRef& t = out_ref(args, 0);
  const float* dy = in_f32(args, 0);
  float* dx = out_f32(args, 0);
  const int64_t planes = t.dims[0] * t.dims[1];
  const int64_t size = planes > 0 ? t.numel / planes : 0;
  for (int64_t i = 0; i < planes; ++i) {
    const float g = dy[i] / static_cast<float>(size);
    for (int64_t j = 0; j < size; ++j) dx[i * size + j] = g;
  }
  return REMAT_OK;
}

remat_status pad(const KernelArgs& args) {
  const Padding pd = padding_of(*args.call, in_ref(args, 0));
  const float value = fattr(*args.call, 0, 0.0f);
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  const int64_t count = out_ref(args, 0).numel;
  for (int64_t i = 0; i < count; ++i) y[i] = value;
  for (int64_t plane = 0; plane < pd.small.n * pd.small.c; ++plane) {
    for (int64_t h = 0; h < pd.small.h; ++h) {
      memcpy(y + (plane * pd.big_h + h + pd.top) * pd.big_w + pd.left,
             x + (plane * pd.small.h + h) * pd.small.w, static_cast<size_t>(pd.small.w) * sizeof(float));
    }
  }
  return REMAT_OK;
}

remat_status pad_grad(const KernelArgs& args) {
  const Padding pd = padding_of(*args.call, out_ref(args, 0));
  const float* dy = in_f32(args, 0);
  float* dx = out_f32(args, 0);
  for (int64_t plane = 0; plane < pd.small.n * pd.small.c; ++plane) {
    for (int64_t h = 0; h < pd.small.h; ++h) {
      memcpy(dx + (plane * pd.small.h + h) * pd.small.w,
             dy + (plane * pd.big_h + h + pd.top) * pd.big_w + pd.left, static_cast<size_t>(pd.small.w) * sizeof(float));
    }
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
