// Elementwise kernels: activations and their gradients, add/mul/scale, powers, bias, dropout,
// column sums, fill.

// x^p as the CPU kernel's power(): torch.pow's exact exponents, powf otherwise.
DEVICE_FN float power(float x, float p) {
  if (p == 1.0f) return x;
  if (p == 2.0f) return x * x;
  if (p == 3.0f) return x * x * x;
  if (p == 0.5f) return sqrtf(x);
  if (p == -0.5f) return 1.0f / sqrtf(x);
  if (p == -1.0f) return 1.0f / x;
  if (p == 0.0f) return 1.0f;
  return powf(x, p);
}

// Unary ops, selected by |op| (GpuUnary in abi.h).
KERNEL unary_op(int op, float alpha, buf_t x, ulong xo, buf_t y, ulong yo, ulong n) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  const float v = F32(x, xo)[i];
  float r;
  switch (op) {
    case kGpuRelu: r = v <= 0.0f ? 0.0f : v; break;  // NaN stays NaN (the CPU kernel's)
    case kGpuGelu: r = 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)); break;
    case kGpuTanh: r = tanhf(v); break;
    case kGpuSigmoid: r = 1.0f / (1.0f + expf(-v)); break;
    case kGpuPow: r = power(v, alpha); break;
    case kGpuSqrt: r = sqrtf(v); break;
    case kGpuLeakyRelu: r = v > 0.0f ? v : v * alpha; break;
    case kGpuErf: r = erff(v); break;
    default: r = alpha * v; break;  // kGpuScale
  }
  F32(y, yo)[i] = r;
}

// Binary ops c = f(a, b), selected by |op| (GpuBinary in abi.h).
KERNEL binary_op(int op, float alpha, buf_t a, ulong ao, buf_t b, ulong bo, buf_t c, ulong co,
                 ulong n) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  const float u = F32(a, ao)[i], v = F32(b, bo)[i];
  float r;
  switch (op) {
    case kGpuAdd: r = u + v; break;
    case kGpuMul: r = u * v; break;
    case kGpuReluGrad: r = v <= 0.0f ? 0.0f : u; break;  // (dy, y); y NaN passes dy
    case kGpuGeluGrad: {                                // (dy, x)
      const float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752440f));
      const float pdf = 0.39894228040143267794f * expf(-0.5f * v * v);
      r = u * (cdf + v * pdf);
      break;
    }
    case kGpuTanhGrad: r = u * (1.0f - v * v); break;        // (dy, y)
    case kGpuSigmoidGrad: r = u * v * (1.0f - v); break;     // (dy, y)
    case kGpuPowGrad:                                        // (dy, x), alpha the exponent
      r = alpha == 0.0f ? u * 0.0f : u * (alpha * power(v, alpha - 1.0f));
      break;
    case kGpuSqrtGrad: r = u / (2.0f * v); break;            // (dy, y)
    case kGpuLeakyReluGrad: r = v > 0.0f ? u : u * alpha; break;  // (dy, x)
    case kGpuErfGrad: r = 1.12837916709551257390f * expf(-v * v) * u; break;  // (dy, x)
    default: r = alpha * (u - v); break;                     // kGpuMseGrad (pred, target)
  }
  F32(c, co)[i] = r;
}

KERNEL bias_add(buf_t x, ulong xo, buf_t b, ulong bo, buf_t y, ulong yo, ulong n, ulong nb) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  F32(y, yo)[i] = F32(x, xo)[i] + F32(b, bo)[i % nb];
}

// One work item per column: rows summed in order, as the CPU kernel does.
KERNEL reduce_leading(buf_t dy, ulong dyo, buf_t db, ulong dbo, ulong rows, ulong nb) {
  const ulong j = GLOBAL_ID();
  if (j >= nb) return;
  GLOBAL const float* src = F32(dy, dyo);
  acc_t acc = 0;
  for (ulong r = 0; r < rows; ++r) acc += src[r * nb + j];
  F32(db, dbo)[j] = (float)acc;
}

// One work item per group of four elements: one Philox call (plan/philox.h) gives their four
// words. Seed and step come from the state: under CUDA graph replay they change every step.
KERNEL dropout(buf_t x, ulong xo, buf_t y, ulong yo, ulong n, ulong key, float p,
               GLOBAL const GpuState* state) {
  const ulong i = GLOBAL_ID() * 4;
  if (i >= n) return;
  const Philox4 r = philox_group(state->seed, state->step, key, i);
  const float keep_scale = 1.0f - p;
  GLOBAL const float* src = F32(x, xo);
  GLOBAL float* dst = F32(y, yo);
  for (int j = 0; j < 4 && i + j < n; ++j) {
    dst[i + j] = uniform01(r.v[j]) >= p ? src[i + j] / keep_scale : src[i + j] * 0.0f;
  }
}

KERNEL fill(buf_t y, ulong yo, ulong n, float value) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  F32(y, yo)[i] = value;
}

// One work item per output [o, i] of x viewed as [outer, n, inner]: the n values summed in
// order, as the CPU kernel does.
KERNEL reduce_sum(buf_t x, ulong xo, buf_t y, ulong yo, ulong outer, ulong n, ulong inner,
                  int mean) {
  const ulong k = GLOBAL_ID();
  if (k >= outer * inner) return;
  const ulong o = k / inner, i = k % inner;
  GLOBAL const float* src = F32(x, xo) + o * n * inner + i;
  acc_t acc = 0;
  for (ulong j = 0; j < n; ++j) acc += src[j * inner];
  F32(y, yo)[k] = (float)(mean ? acc / (acc_t)n : acc);
}

// One work item per element of y viewed as [outer, n, inner].
KERNEL broadcast(buf_t x, ulong xo, buf_t y, ulong yo, ulong outer, ulong n, ulong inner,
                 int mean) {
  const ulong k = GLOBAL_ID();
  if (k >= outer * n * inner) return;
  const float v = F32(x, xo)[(k / (n * inner)) * inner + k % inner];
  F32(y, yo)[k] = mean ? v / (float)n : v;
}
