// Loss kernels. The scalar losses run as one work-group that sums per-item partials in a fixed
// tree order: deterministic for a given work-group size (chosen once per device).

KERNEL cross_entropy(buf_t logits, ulong lo, buf_t labels, ulong lbo, buf_t loss, ulong losso,
                     buf_t probs, ulong po, ulong rows, ulong c, GLOBAL GpuState* state,
                     uint op, uint code, LOCAL_PARAM(acc_t, partial)) {
  LOCAL_BIND(acc_t, partial);
  const uint lid = LOCAL_ID(), size = LOCAL_SIZE();
  acc_t total = 0;
  for (ulong r = lid; r < rows; r += size) {
    const int label = I32(labels, lbo)[r];
    if (label < 0 || (ulong)label >= c) {
      report_bad(state, op, code, (int)r, (long)c);
      continue;
    }
    GLOBAL const float* x = F32(logits, lo) + r * c;
    float mx;
    const acc_t sum = softmax_row(x, F32(probs, po) + r * c, c, &mx);
    total -= (acc_t)x[label] - (acc_t)mx - log(sum);
  }
  partial[lid] = total;
  group_sum(partial, size);
  if (lid == 0) F32(loss, losso)[0] = rows > 0 ? (float)(partial[0] / (acc_t)rows) : 0.0f;
}

// One work item per row; a row with a bad label gets zeros.
KERNEL cross_entropy_grad(buf_t probs, ulong po, buf_t labels, ulong lbo, buf_t dlogits,
                          ulong dlo, ulong rows, ulong c, float inv_n, GLOBAL GpuState* state,
                          uint op, uint code) {
  const ulong r = GLOBAL_ID();
  if (r >= rows) return;
  const int label = I32(labels, lbo)[r];
  GLOBAL const float* p = F32(probs, po) + r * c;
  GLOBAL float* d = F32(dlogits, dlo) + r * c;
  if (label < 0 || (ulong)label >= c) {
    report_bad(state, op, code, (int)r, (long)c);
    for (ulong j = 0; j < c; ++j) d[j] = 0.0f;
    return;
  }
  for (ulong j = 0; j < c; ++j) d[j] = p[j] * inv_n;
  d[label] = (p[label] - 1.0f) * inv_n;
}

KERNEL mse(buf_t pred, ulong po, buf_t target, ulong to, buf_t loss, ulong losso, ulong n,
           LOCAL_PARAM(acc_t, partial)) {
  LOCAL_BIND(acc_t, partial);
  const uint lid = LOCAL_ID(), size = LOCAL_SIZE();
  GLOBAL const float* a = F32(pred, po);
  GLOBAL const float* b = F32(target, to);
  acc_t sum = 0;
  for (ulong i = lid; i < n; i += size) {
    const acc_t d = (acc_t)a[i] - b[i];
    sum += d * d;
  }
  partial[lid] = sum;
  group_sum(partial, size);
  if (lid == 0) F32(loss, losso)[0] = n > 0 ? (float)(partial[0] / (acc_t)n) : 0.0f;
}
