// Optimizer steps. Plans run them in place (outputs are the inputs' tensors); each element is
// read before it is written, so separate outputs work too.

__kernel void sgd_update(buf_t param, ulong po, buf_t grad, ulong go, buf_t vel, ulong vo,
                         buf_t param_out, ulong pqo, buf_t vel_out, ulong vqo, ulong n, float lr,
                         float momentum, float wd, int has_velocity) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float p = F32(param, po)[i];
  const float g = F32(grad, go)[i] + wd * p;
  if (has_velocity) {
    const float v = momentum * F32(vel, vo)[i] + g;
    F32(vel_out, vqo)[i] = v;
    F32(param_out, pqo)[i] = p - lr * v;
  } else {
    F32(param_out, pqo)[i] = p - lr * g;
  }
}

// The bias-corrected scalars come from the host, computed in double as the CPU kernel does.
__kernel void adam_update(buf_t param, ulong po, buf_t grad, ulong go, buf_t mom1, ulong mo,
                          buf_t mom2, ulong vo, buf_t param_out, ulong pqo, buf_t mom1_out,
                          ulong mqo, buf_t mom2_out, ulong vqo, ulong n, float b1, float b2,
                          float eps, float wd, int decoupled, float step_size, float bias2_sqrt,
                          float one_minus_b1, float one_minus_b2, float decay) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  float p = F32(param, po)[i];
  float g = F32(grad, go)[i];
  if (decoupled) {
    p *= decay;
  } else {
    g += wd * p;
  }
  const float m = b1 * F32(mom1, mo)[i] + one_minus_b1 * g;
  const float v = b2 * F32(mom2, vo)[i] + one_minus_b2 * g * g;
  F32(mom1_out, mqo)[i] = m;
  F32(mom2_out, vqo)[i] = v;
  F32(param_out, pqo)[i] = p - step_size * (m / (sqrt(v) / bias2_sqrt + eps));
}
