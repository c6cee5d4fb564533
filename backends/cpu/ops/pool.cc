// Pooling (max, average, global average) and spatial padding, with their gradients, over NCHW
// planes: every (n, c) plane is pooled on its own, so threads take whole planes.
#include <math.h>
#include <string.h>

#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/isa/lane_sum.h"
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
  const bool average = call.code == static_cast<uint16_t>(OpCode::kAvgPool) ||
                       call.code == static_cast<uint16_t>(OpCode::kAvgPoolGrad);
  Pool pool{nchw_of(x.dims, x.rank), 0, 0, pool_attrs(call.iattrs, call.num_iattrs, average)};
  const Nchw out = nchw_of(y.dims, y.rank);
  pool.p = out.h;
  pool.q = out.w;
  return pool;
}

// Calls f(in_at, out_at, rows, cols) for every window of every plane, planes and windows in
// order, the planes spread over the threads: |in_at| is the offset of the window's input
// plane, |out_at| that of its output element.
template <typename F>
void each_window(const KernelArgs& args, const Pool& pool, const F& f) {
  parallel_for(args, pool.in.n * pool.in.c, 1, [&](int64_t first, int64_t last, uint32_t) {
    for (int64_t plane = first; plane < last; ++plane) {
      for (int64_t p = 0; p < pool.p; ++p) {
        const PoolWindow rows = pool_window(p, pool.in.h, pool.a.kernel_h, pool.a.stride_h,
                                            pool.a.pad_h, pool.a.dilation_h);
        for (int64_t q = 0; q < pool.q; ++q) {
          const PoolWindow cols = pool_window(q, pool.in.w, pool.a.kernel_w, pool.a.stride_w,
                                              pool.a.pad_w, pool.a.dilation_w);
          f(plane * pool.in.h * pool.in.w, (plane * pool.p + p) * pool.q + q, rows, cols);
        }
      }
    }
  });
}

// Index in |plane| of the window's maximum, as torch finds it: the first largest value in
// row-major order, or the last NaN; -1 for a window with no element inside the input (a dilated
// one can straddle it: its output is -inf and takes no gradient).
int64_t argmax(const float* plane, int64_t width, const PoolWindow& rows, const PoolWindow& cols) {
  if (rows.start >= rows.end || cols.start >= cols.end) return -1;
  int64_t index = rows.start * width + cols.start;
  float best = -INFINITY;
  for (int64_t ih = rows.start; ih < rows.end; ih += rows.step) {
    for (int64_t iw = cols.start; iw < cols.end; iw += cols.step) {
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
  const int64_t top = iattr(call, attr::pad::top), bottom = iattr(call, attr::pad::bottom);
  const int64_t left = iattr(call, attr::pad::left), right = iattr(call, attr::pad::right);
  Padding pad{nchw_of(small.dims, small.rank), top, left, 0, 0};
  pad.big_h = pad.small.h + top + bottom;
  pad.big_w = pad.small.w + left + right;
  return pad;
}

}  // namespace

remat_status max_pool(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, in_ref(args, 0), out_ref(args, 0));
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  each_window(args, pool,
              [&](int64_t in_at, int64_t out_at, const PoolWindow& rows, const PoolWindow& cols) {
                const int64_t at = argmax(x + in_at, pool.in.w, rows, cols);
                y[out_at] = at < 0 ? -INFINITY : x[in_at + at];
              });
  return REMAT_OK;
}

remat_status max_pool_grad(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, in_ref(args, 1), in_ref(args, 0));
  const float* dy = in_f32(args, 0);
  const float* x = in_f32(args, 1);
  float* dx = out_f32(args, 0);
  memset(dx, 0, static_cast<size_t>(out_ref(args, 0).numel) * sizeof(float));
  each_window(args, pool,
              [&](int64_t in_at, int64_t out_at, const PoolWindow& rows, const PoolWindow& cols) {
                const int64_t at = argmax(x + in_at, pool.in.w, rows, cols);
                if (at >= 0) dx[in_at + at] += dy[out_at];
              });
  return REMAT_OK;
}

remat_status avg_pool(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, in_ref(args, 0), out_ref(args, 0));
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  each_window(args, pool,
              [&](int64_t in_at, int64_t out_at, const PoolWindow& rows, const PoolWindow& cols) {
                Accum sum = 0;
                for (int64_t ih = rows.start; ih < rows.end; ++ih) {
                  for (int64_t iw = cols.start; iw < cols.end; ++iw)
                    sum += x[in_at + ih * pool.in.w + iw];
                }
                y[out_at] = static_cast<float>(sum / static_cast<Accum>(divisor(pool, rows, cols)));
              });
  return REMAT_OK;
}

remat_status avg_pool_grad(const KernelArgs& args) {
  const Pool pool = pool_of(*args.call, out_ref(args, 0), in_ref(args, 0));
  const float* dy = in_f32(args, 0);
  float* dx = out_f32(args, 0);
  memset(dx, 0, static_cast<size_t>(out_ref(args, 0).numel) * sizeof(float));
  each_window(args, pool,
              [&](int64_t in_at, int64_t out_at, const PoolWindow& rows, const PoolWindow& cols) {
                const float g = dy[out_at] / static_cast<float>(divisor(pool, rows, cols));
                for (int64_t ih = rows.start; ih < rows.end; ++ih) {
                  for (int64_t iw = cols.start; iw < cols.end; ++iw)
                    dx[in_at + ih * pool.in.w + iw] += g;
                }
              });
  return REMAT_OK;
}

remat_status global_avg_pool(const KernelArgs& args) {
  const TensorRef& t = in_ref(args, 0);
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  const int64_t planes = t.dims[0] * t.dims[1];
  const int64_t size = planes > 0 ? t.numel / planes : 0;
  parallel_for(args, planes, 1, [&](int64_t first, int64_t last, uint32_t) {
    for (int64_t i = first; i < last; ++i) {
      Accum sum = 0;
      for (int64_t j = 0; j < size; ++j) sum += x[i * size + j];
      y[i] = static_cast<float>(sum / static_cast<Accum>(size));
    }
  });
  return REMAT_OK;
}

remat_status global_avg_pool_grad(const KernelArgs& args) {
  const TensorRef& t = out_ref(args, 0);
  const float* dy = in_f32(args, 0);
  float* dx = out_f32(args, 0);
  const int64_t planes = t.dims[0] * t.dims[1];
  const int64_t size = planes > 0 ? t.numel / planes : 0;
  parallel_for(args, planes, 1, [&](int64_t first, int64_t last, uint32_t) {
    for (int64_t i = first; i < last; ++i) {
      const float g = dy[i] / static_cast<float>(size);
      for (int64_t j = 0; j < size; ++j) dx[i * size + j] = g;
    }
  });
  return REMAT_OK;
}

remat_status pad(const KernelArgs& args) {
  const Padding pd = padding_of(*args.call, in_ref(args, 0));
  const float value = fattr(*args.call, attr::pad::value);
  const float* x = in_f32(args, 0);
  float* y = out_f32(args, 0);
  const int64_t count = out_ref(args, 0).numel;
  for (int64_t i = 0; i < count; ++i) y[i] = value;
  for (int64_t plane = 0; plane < pd.small.n * pd.small.c; ++plane) {
    for (int64_t h = 0; h < pd.small.h; ++h) {
      memcpy(y + (plane * pd.big_h + h + pd.top) * pd.big_w + pd.left,
             x + (plane * pd.small.h + h) * pd.small.w,
             static_cast<size_t>(pd.small.w) * sizeof(float));
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
             dy + (plane * pd.big_h + h + pd.top) * pd.big_w + pd.left,
             static_cast<size_t>(pd.small.w) * sizeof(float));
    }
  }
  return REMAT_OK;
}

}  // namespace cpu
}  // namespace remat
