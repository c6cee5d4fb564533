// Loss kernels. The scalar losses run as one work-group that sums per-item partials in a fixed
// tree order: deterministic for a given work-group size (chosen once per device).

__kernel void cross_entropy(buf_t logits, ulong lo, buf_t labels, ulong lbo, buf_t loss, ulong losso,
                            buf_t probs, ulong po, ulong rows, ulong c, __global int* flags,
                            __local acc_t* partial) {
  const uint lid = get_local_id(0), size = get_local_size(0);
  acc_t total = 0;
  for (ulong r = lid; r < rows; r += size) {
    const int label = I32(labels, lbo)[r];
    if (label < 0 || (ulong)label >= c) {
      flag_bad(flags, (int)r);
      continue;
    }
    __global const float* x = F32(logits, lo) + r * c;
    __global float* p = F32(probs, po) + r * c;
    float mx = x[0];
    for (ulong j = 1; j < c; ++j) mx = x[j] > mx ? x[j] : mx;
    acc_t sum = 0;
    for (ulong j = 0; j < c; ++j) {
      const float e = exp(x[j] - mx);
      p[j] = e;
      sum += e;
    }
    const float inv = (float)(1.0 / sum);
    for (ulong j = 0; j < c; ++j) p[j] *= inv;
    total -= (acc_t)x[label] - (acc_t)mx - log(sum);
  }
  partial[lid] = total;
  group_sum(partial, size);
  if (lid == 0) F32(loss, losso)[0] = rows > 0 ? (float)(partial[0] / (acc_t)rows) : 0.0f;
}

__kernel void cross_entropy_grad(buf_t probs, ulong po, buf_t labels, ulong lbo, buf_t dlogits,
                                 ulong dlo, ulong rows, ulong c, float inv_n, __global int* flags) {
  const size_t r = get_global_id(0);
  if (r >= rows) return;
  const int label = I32(labels, lbo)[r];
  if (label < 0 || (ulong)label >= c) {
    flag_bad(flags, (int)r);
    return;
  }
  __global const float* p = F32(probs, po) + r * c;
  __global float* d = F32(dlogits, dlo) + r * c;
  for (ulong j = 0; j < c; ++j) d[j] = p[j] * inv_n;
  d[label] = (p[label] - 1.0f) * inv_n;
}

__kernel void mse(buf_t pred, ulong po, buf_t target, ulong to, buf_t loss, ulong losso, ulong n,
                  __local acc_t* partial) {
  const uint lid = get_local_id(0), size = get_local_size(0);
  __global const float* a = F32(pred, po);
  __global const float* b = F32(target, to);
  acc_t sum = 0;
  for (ulong i = lid; i < n; i += size) {
    const acc_t d = (acc_t)a[i] - b[i];
    sum += d * d;
  }
  partial[lid] = sum;
  group_sum(partial, size);
  if (lid == 0) F32(loss, losso)[0] = n > 0 ? (float)(partial[0] / (acc_t)n) : 0.0f;
}
