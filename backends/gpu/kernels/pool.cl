// Pooling (max, average, global average) and its gradients over NCHW planes. The forward ops
// take one work item per output element; the windowed gradients one per input element,
// gathering the windows that cover it in output order (the order the CPU kernel adds them in),
// so no two work items write one element and the sums are the CPU's.

// A pooling op's sizes as kernel parameters, in the order ops/pool.cc passes them: |planes|
// = N * C planes of [h, w] in, [p, q] out; the window attributes (dilations 1 for average
// pooling); |count_include_pad| (1 for max pooling, which does not read it).
#define POOL_SHAPE_PARAMS                                                                    \
  long planes, long h, long w, long p, long q, long kernel_h, long kernel_w, long stride_h,  \
      long stride_w, long pad_h, long pad_w, long dilation_h, long dilation_w,               \
      int count_include_pad

// One window along an axis: its elements start, start + step, ... below end, clipped to the
// input, and its length clipped to the padded input (avg_pool's divisor with
// count_include_pad; step 1).
typedef struct PoolSpan {
  long start, end, padded_len, step;
} PoolSpan;

// Window |o| of |size| elements |dilation| apart along an axis of length |len| (pool_window of
// plan/spatial_shape.h). (Not "kernel": a keyword of OpenCL C.)
DEVICE_FN PoolSpan pool_span(long o, long len, long size, long stride, long pad, long dilation) {
  PoolSpan span;
  span.start = o * stride - pad;
  span.end = span.start + dilation * (size - 1) + 1;
  if (span.end > len + pad) span.end = len + pad;
  span.padded_len = span.end - span.start;
  if (span.start < 0) span.start += (-span.start + dilation - 1) / dilation * dilation;
  if (span.end > len) span.end = len;
  span.step = dilation;
  return span;
}

// The first window (spanning |size| indices) along an axis that may cover index |at|: the
// windows o with o * stride - pad <= at < o * stride - pad + size start here.
DEVICE_FN long first_window(long at, long size, long stride, long pad) {
  const long reach = at + pad - size;
  return reach < 0 ? 0 : reach / stride + 1;
}

// Index in |plane| (|width| wide) of the window's maximum, as the CPU kernel finds it: the
// first largest value in row-major order, or the last NaN; -1 for a window with no element
// inside the input.
DEVICE_FN long window_argmax(GLOBAL const float* plane, long width, PoolSpan rows, PoolSpan cols) {
  if (rows.start >= rows.end || cols.start >= cols.end) return -1;
  long index = rows.start * width + cols.start;
  float best = plane[index];
  for (long ih = rows.start; ih < rows.end; ih += rows.step) {
    for (long iw = cols.start; iw < cols.end; iw += cols.step) {
      const float v = plane[ih * width + iw];
      if (v > best || isnan(v)) {
        best = v;
        index = ih * width + iw;
      }
    }
  }
  return index;
}

// avg_pool's divisor of window (rows, cols).
DEVICE_FN long pool_divisor(PoolSpan rows, PoolSpan cols, int count_include_pad) {
  return count_include_pad ? rows.padded_len * cols.padded_len
                           : (rows.end - rows.start) * (cols.end - cols.start);
}

KERNEL max_pool(buf_t x, ulong xo, buf_t y, ulong yo, POOL_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(planes * p * q)) return;
  const long j = (long)gid % q, i = (long)gid / q % p, plane = (long)gid / (p * q);
  GLOBAL const float* in = F32(x, xo) + plane * h * w;
  const PoolSpan rows = pool_span(i, h, kernel_h, stride_h, pad_h, dilation_h);
  const PoolSpan cols = pool_span(j, w, kernel_w, stride_w, pad_w, dilation_w);
  const long at = window_argmax(in, w, rows, cols);
  F32(y, yo)[gid] = at < 0 ? -INFINITY : in[at];
}

// dx[e] = sum of dy over the windows whose argmax is e, windows in output order.
KERNEL max_pool_grad(buf_t dy, ulong dyo, buf_t x, ulong xo, buf_t dx, ulong dxo,
                     POOL_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(planes * h * w)) return;
  const long iw = (long)gid % w, ih = (long)gid / w % h, plane = (long)gid / (h * w);
  GLOBAL const float* in = F32(x, xo) + plane * h * w;
  GLOBAL const float* grad = F32(dy, dyo) + plane * p * q;
  const long self = ih * w + iw;
  float acc = 0.0f;
  // The windows whose span holds (ih, iw), in output order; the argmax test also tells whether
  // a dilated one has it as an element.
  const long span_h = dilation_h * (kernel_h - 1) + 1, span_w = dilation_w * (kernel_w - 1) + 1;
  for (long i = first_window(ih, span_h, stride_h, pad_h); i < p; ++i) {
    if (i * stride_h - pad_h > ih) break;
    const PoolSpan rows = pool_span(i, h, kernel_h, stride_h, pad_h, dilation_h);
    if (ih < rows.start || ih >= rows.end) continue;
    for (long j = first_window(iw, span_w, stride_w, pad_w); j < q; ++j) {
      if (j * stride_w - pad_w > iw) break;
      const PoolSpan cols = pool_span(j, w, kernel_w, stride_w, pad_w, dilation_w);
      if (iw >= cols.start && iw < cols.end && window_argmax(in, w, rows, cols) == self)
        acc += grad[i * q + j];
    }
  }
  F32(dx, dxo)[gid] = acc;
}

// y = the window's sum (acc_t, row-major) divided by its divisor, rounded once.
KERNEL avg_pool(buf_t x, ulong xo, buf_t y, ulong yo, POOL_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(planes * p * q)) return;
  const long j = (long)gid % q, i = (long)gid / q % p, plane = (long)gid / (p * q);
  GLOBAL const float* in = F32(x, xo) + plane * h * w;
  const PoolSpan rows = pool_span(i, h, kernel_h, stride_h, pad_h, 1);
  const PoolSpan cols = pool_span(j, w, kernel_w, stride_w, pad_w, 1);
  acc_t sum = 0;
  for (long ih = rows.start; ih < rows.end; ++ih) {
    for (long iw = cols.start; iw < cols.end; ++iw) sum += in[ih * w + iw];
  }
  F32(y, yo)[gid] = (float)(sum / (acc_t)pool_divisor(rows, cols, count_include_pad));
}

// dx[e] = sum of dy / divisor (in float, as the CPU kernel) over the windows that hold e.
KERNEL avg_pool_grad(buf_t dy, ulong dyo, buf_t dx, ulong dxo, POOL_SHAPE_PARAMS) {
  const ulong gid = GLOBAL_ID();
  if (gid >= (ulong)(planes * h * w)) return;
  const long iw = (long)gid % w, ih = (long)gid / w % h, plane = (long)gid / (h * w);
  GLOBAL const float* grad = F32(dy, dyo) + plane * p * q;
  float acc = 0.0f;
  for (long i = first_window(ih, kernel_h, stride_h, pad_h); i < p; ++i) {
    const PoolSpan rows = pool_span(i, h, kernel_h, stride_h, pad_h, 1);
    if (rows.start > ih) break;
    if (ih >= rows.end) continue;
    for (long j = first_window(iw, kernel_w, stride_w, pad_w); j < q; ++j) {
      const PoolSpan cols = pool_span(j, w, kernel_w, stride_w, pad_w, 1);
      if (cols.start > iw) break;
      if (iw < cols.end) {
        acc += grad[i * q + j] / (float)pool_divisor(rows, cols, count_include_pad);
      }
    }
  }
  F32(dx, dxo)[gid] = acc;
}

// y[plane] = mean of the plane's |size| values: one work item per plane, acc_t in order.
KERNEL global_avg_pool(buf_t x, ulong xo, buf_t y, ulong yo, ulong planes, ulong size) {
  const ulong plane = GLOBAL_ID();
  if (plane >= planes) return;
  GLOBAL const float* in = F32(x, xo) + plane * size;
  acc_t sum = 0;
  for (ulong i = 0; i < size; ++i) sum += in[i];
  F32(y, yo)[plane] = (float)(sum / (acc_t)size);
}

// dx[plane, i] = dy[plane] / size: one work item per element of dx.
KERNEL global_avg_pool_grad(buf_t dy, ulong dyo, buf_t dx, ulong dxo, ulong planes,
                            ulong size) {
  const ulong gid = GLOBAL_ID();
  if (gid >= planes * size) return;
  F32(dx, dxo)[gid] = F32(dy, dyo)[gid / size] / (float)size;
}
