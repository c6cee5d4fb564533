// Data movement: embedding lookup and its gradient, general permute, pitched row copies (also
// concat and slice), constant padding of NCHW planes and its gradient.

// One work item per output element; a bad id gives a row of zeros and a report. The table and
// out are typed (half.cl).
KERNEL embedding(buf_t ids, ulong io, buf_t table, ulong to, int tt, buf_t out, ulong oo, int ot,
                 ulong count, ulong h, ulong vocab, GLOBAL GpuState* state, uint op, uint code) {
  const ulong g = GLOBAL_ID();
  if (g >= count * h) return;
  const ulong j = g / h, k = g % h;
  const int id = I32(ids, io)[j];
  if (id < 0 || (ulong)id >= vocab) {
    if (k == 0) report_bad(state, op, code, (int)j, (long)vocab);
    store_element(out, oo, ot, g, 0.0f);
    return;
  }
  store_element(out, oo, ot, g, load_element(table, to, tt, (ulong)id * h + k));
}

// One work item per (column k, vocabulary range r): the vocabulary is cut into ranges of |span|
// ids (the host picks span so that there are enough work items), and each work item walks every
// id in index order, adding the rows of the ids in its range: each element of dtable is summed
// by one work item, in the CPU kernel's order (bitwise the same). Adjacent work items take
// adjacent columns. dtable is zeroed by the host before this kernel. Work item 0 reports every
// bad id (the report keeps the smallest position). dy is typed (half.cl), dtable float32.
KERNEL embedding_grad(buf_t dy, ulong dyo, int dyt, buf_t ids, ulong io, buf_t dtable, ulong dto,
                      ulong count, ulong h, ulong vocab, ulong span, ulong ranges,
                      GLOBAL GpuState* state, uint op, uint code) {
  const ulong g = GLOBAL_ID();
  if (g >= h * ranges) return;
  const ulong k = g % h, lo = g / h * span;
  GLOBAL const int* id = I32(ids, io);
  GLOBAL float* dst = F32(dtable, dto);
  for (ulong j = 0; j < count; ++j) {
    const int v = id[j];
    if (v < 0 || (ulong)v >= vocab) {
      if (g == 0) report_bad(state, op, code, (int)j, (long)vocab);
      continue;
    }
    if ((ulong)v - lo < span) dst[(ulong)v * h + k] += load_element(dy, dyo, dyt, j * h + k);
  }
}

// y[i_0..i_{r-1}] = x[sum i_k * s_k]: one work item per output element of |es| bytes (4 and 2
// as one load, others a byte at a time). The output dims d_k and source strides s_k come as
// scalars (vector arguments are not portable).
KERNEL permute(buf_t x, ulong xo, buf_t y, ulong yo, ulong total, ulong es, int r, ulong d0,
               ulong d1, ulong d2, ulong d3, ulong d4, ulong d5, ulong s0, ulong s1, ulong s2,
               ulong s3, ulong s4, ulong s5) {
  const ulong dst = GLOBAL_ID();
  if (dst >= total) return;
  const ulong dims[6] = {d0, d1, d2, d3, d4, d5};
  const ulong strides[6] = {s0, s1, s2, s3, s4, s5};
  ulong rest = dst, src = 0;
  for (int k = r - 1; k >= 0; --k) {
    src += (rest % dims[k]) * strides[k];
    rest /= dims[k];
  }
  if (es == 4) {
    ((GLOBAL uint*)(y + yo))[dst] = ((GLOBAL const uint*)(x + xo))[src];
  } else if (es == 2) {
    ((GLOBAL ushort*)(y + yo))[dst] = ((GLOBAL const ushort*)(x + xo))[src];
  } else {
    for (ulong b = 0; b < es; ++b) y[yo + dst * es + b] = x[xo + src * es + b];
  }
}

// Copies |rows| runs of |run| bytes between pitched layouts (select and its gradient, concat,
// slice), |unit| bytes a work item. Offsets and pitches are in bytes; |unit| is 4 when everything
// is a multiple of 4, else 2 (16-bit elements).
KERNEL copy_rows(buf_t src, ulong so, ulong src_pitch, buf_t dst, ulong dso, ulong dst_pitch,
                 ulong run, ulong rows, ulong unit) {
  const ulong g = GLOBAL_ID();
  const ulong per_row = run / unit;
  if (g >= per_row * rows) return;
  const ulong row = g / per_row, i = (g % per_row) * unit;
  if (unit == 4) {
    *(GLOBAL uint*)(dst + dso + row * dst_pitch + i) =
        *(GLOBAL const uint*)(src + so + row * src_pitch + i);
  } else {
    *(GLOBAL ushort*)(dst + dso + row * dst_pitch + i) =
        *(GLOBAL const ushort*)(src + so + row * src_pitch + i);
  }
}

// Padding of |planes| planes of [h, w] into [h + top + bottom, w + left + right] (|big_h|,
// |big_w|): one work item per output element, |value| outside the input.
KERNEL pad(buf_t x, ulong xo, buf_t y, ulong yo, ulong planes, ulong h, ulong w, ulong big_h,
           ulong big_w, ulong top, ulong left, float value) {
  const ulong gid = GLOBAL_ID();
  if (gid >= planes * big_h * big_w) return;
  const ulong col = gid % big_w, row = gid / big_w % big_h, plane = gid / (big_h * big_w);
  // Unsigned: a position left of or above the input wraps to a large value.
  const ulong ih = row - top, iw = col - left;
  F32(y, yo)[gid] = ih < h && iw < w ? F32(x, xo)[(plane * h + ih) * w + iw] : value;
}

// pad's gradient: dx is the inner [h, w] of each padded plane of dy; one work item per element
// of dx.
KERNEL pad_grad(buf_t dy, ulong dyo, buf_t dx, ulong dxo, ulong planes, ulong h, ulong w,
                ulong big_h, ulong big_w, ulong top, ulong left) {
  const ulong gid = GLOBAL_ID();
  if (gid >= planes * h * w) return;
  const ulong iw = gid % w, ih = gid / w % h, plane = gid / (h * w);
  F32(dx, dxo)[gid] = F32(dy, dyo)[(plane * big_h + ih + top) * big_w + iw + left];
}
