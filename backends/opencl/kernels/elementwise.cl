// Elementwise kernels: activations and their gradients, add/mul/scale, bias, dropout, column sums.

// Unary ops, selected by |op| (values of OclUnary in opencl_kernels.h).
__kernel void unary_op(int op, float alpha, buf_t x, ulong xo, buf_t y, ulong yo, ulong n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float v = F32(x, xo)[i];
  float r;
  switch (op) {
    case 0: r = v > 0.0f ? v : 0.0f; break;                                    // relu
    case 1: r = 0.5f * v * (1.0f + erf(v * 0.70710678118654752440f)); break;   // gelu
    case 2: r = tanh(v); break;                                                // tanh
    case 3: r = 1.0f / (1.0f + exp(-v)); break;                                // sigmoid
    default: r = alpha * v; break;                                             // scale
  }
  F32(y, yo)[i] = r;
}

// Binary ops c = f(a, b), selected by |op| (values of OclBinary in opencl_kernels.h).
__kernel void binary_op(int op, float alpha, buf_t a, ulong ao, buf_t b, ulong bo, buf_t c, ulong co,
                        ulong n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float u = F32(a, ao)[i], v = F32(b, bo)[i];
  float r;
  switch (op) {
    case 0: r = u + v; break;                                   // add
    case 1: r = u * v; break;                                   // mul
    case 2: r = v > 0.0f ? u : 0.0f; break;                     // relu_grad(dy, y)
    case 3: {                                                   // gelu_grad(dy, x)
      const float cdf = 0.5f * (1.0f + erf(v * 0.70710678118654752440f));
      const float pdf = 0.39894228040143267794f * exp(-0.5f * v * v);
      r = u * (cdf + v * pdf);
      break;
    }
    case 4: r = u * (1.0f - v * v); break;                      // tanh_grad(dy, y)
    case 5: r = u * v * (1.0f - v); break;                      // sigmoid_grad(dy, y)
    default: r = alpha * (u - v); break;                        // mse_grad(pred, target)
  }
  F32(c, co)[i] = r;
}

__kernel void bias_add(buf_t x, ulong xo, buf_t b, ulong bo, buf_t y, ulong yo, ulong n, ulong nb) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  F32(y, yo)[i] = F32(x, xo)[i] + F32(b, bo)[i % nb];
}

// One work item per column: rows summed in order, as the CPU kernel does.
__kernel void reduce_leading(buf_t dy, ulong dyo, buf_t db, ulong dbo, ulong rows, ulong nb) {
  const size_t j = get_global_id(0);
  if (j >= nb) return;
  __global const float* src = F32(dy, dyo);
  acc_t acc = 0;
  for (ulong r = 0; r < rows; ++r) acc += src[r * nb + j];
  F32(db, dbo)[j] = (float)acc;
}

// One work item per group of four elements: one Philox call gives their four words.
__kernel void dropout(buf_t x, ulong xo, buf_t y, ulong yo, ulong n, ulong seed, ulong step, ulong key,
                      float p) {
  const ulong i = (ulong)get_global_id(0) * 4;
  if (i >= n) return;
  const uint4 r = philox4x32((uint4)((uint)(i >> 2), (uint)(i >> 34), (uint)step, (uint)key),
                             (uint2)((uint)seed, (uint)(seed >> 32)));
  const uint words[4] = {r.x, r.y, r.z, r.w};
  const float keep_scale = 1.0f - p;
  __global const float* src = F32(x, xo);
  __global float* dst = F32(y, yo);
  for (int j = 0; j < 4 && i + j < n; ++j) {
    dst[i + j] = uniform01(words[j]) >= p ? src[i + j] / keep_scale : 0.0f;
  }
}
