// Optimizer steps. Plans run them in place (outputs are the inputs' tensors); each element is
// read before it is written, so separate outputs work too. Both skip their update when an
// earlier op of the step reported bad data, so a failed step leaves parameters and moments as
// they were (the CPU backend stops at the error; the OpenCL backend too, CUDA finds out after
// the step).

// The non-finite guard: one work item per element; the smallest position holding a NaN or an
// infinity is reported (its bits by report_value), and the updates after it skip themselves.
KERNEL finite_check(buf_t x, ulong xo, ulong n, GLOBAL GpuState* state, uint op, uint code) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  if (!isfinite(F32(x, xo)[i])) report_bad(state, op, code, (int)i, 0);
}

KERNEL sgd_update(buf_t param, ulong po, buf_t grad, ulong go, buf_t vel, ulong vo,
                  buf_t param_out, ulong pqo, buf_t vel_out, ulong vqo, ulong n, float lr,
                  float momentum, float wd, int has_velocity, GLOBAL const GpuState* state) {
  const ulong i = GLOBAL_ID();
  if (i >= n || state->error != 0) return;
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

// |step_size| = lr / (1 - b1^t) and |bias2_sqrt| = sqrt(1 - b2^t), t = step + 1, computed by
// the host in double as the CPU kernel does, rounded once; the other scalars likewise.
KERNEL adam_update(buf_t param, ulong po, buf_t grad, ulong go, buf_t mom1, ulong mo,
                   buf_t mom2, ulong vo, buf_t param_out, ulong pqo, buf_t mom1_out, ulong mqo,
                   buf_t mom2_out, ulong vqo, ulong n, float b1, float b2, float eps, float wd,
                   int decoupled, float step_size, float bias2_sqrt, float one_minus_b1,
                   float one_minus_b2, float decay, float lr, GLOBAL const GpuState* state) {
#if REMAT_GPU_REPLAYED_LAUNCHES
  // CUDA only: a replayed graph would give every step the captured step's |step_size| and
  // |bias2_sqrt|, so they are worked out here from the step in device memory, in double
  // as the host does, once per block (OpenCL C 1.2 allows __local variables only at kernel
  // scope, so this block cannot be shared text).
  __shared__ float step_scalars[2];
  if (threadIdx.x == 0) {
    const double t = (double)state->step + 1.0;
    step_scalars[0] = (float)((double)lr / (1.0 - pow((double)b1, t)));
    step_scalars[1] = (float)sqrt(1.0 - pow((double)b2, t));
  }
  __syncthreads();
  step_size = step_scalars[0];
  bias2_sqrt = step_scalars[1];
#endif
  const ulong i = GLOBAL_ID();
  if (i >= n || state->error != 0) return;
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
  F32(param_out, pqo)[i] = p - step_size * (m / (sqrtf(v) / bias2_sqrt + eps));
}
