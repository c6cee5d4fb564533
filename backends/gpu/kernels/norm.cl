// Row-wise normalisations over the last axis: softmax, log-softmax, layer norm and their
// gradients.
// One work item per row (or per column for dgamma/dbeta), summing in the CPU kernels' order.

KERNEL softmax(buf_t x, ulong xo, buf_t y, ulong yo, ulong rows, ulong n) {
  const ulong r = GLOBAL_ID();
  if (r >= rows) return;
  float mx;
  softmax_row(F32(x, xo) + r * n, F32(y, yo) + r * n, n, &mx);
}

KERNEL softmax_grad(buf_t dy, ulong dyo, buf_t y, ulong yo, buf_t dx, ulong dxo, ulong rows,
                    ulong n) {
  const ulong r = GLOBAL_ID();
  if (r >= rows) return;
  GLOBAL const float* dyr = F32(dy, dyo) + r * n;
  GLOBAL const float* yr = F32(y, yo) + r * n;
  GLOBAL float* dxr = F32(dx, dxo) + r * n;
  acc_t dot = 0;
  for (ulong j = 0; j < n; ++j) dot += (acc_t)dyr[j] * yr[j];
  const float d = (float)dot;
  for (ulong j = 0; j < n; ++j) dxr[j] = yr[j] * (dyr[j] - d);
}

KERNEL log_softmax(buf_t x, ulong xo, buf_t y, ulong yo, ulong rows, ulong n) {
  const ulong r = GLOBAL_ID();
  if (r >= rows) return;
  GLOBAL const float* xr = F32(x, xo) + r * n;
  GLOBAL float* yr = F32(y, yo) + r * n;
  float mx = xr[0];
  for (ulong j = 1; j < n; ++j) mx = xr[j] > mx ? xr[j] : mx;
  acc_t sum = 0;
  for (ulong j = 0; j < n; ++j) sum += expf(xr[j] - mx);
  const float log_sum = (float)log(sum);
  for (ulong j = 0; j < n; ++j) yr[j] = (xr[j] - mx) - log_sum;
}

KERNEL log_softmax_grad(buf_t dy, ulong dyo, buf_t y, ulong yo, buf_t dx, ulong dxo, ulong rows,
                        ulong n) {
  const ulong r = GLOBAL_ID();
  if (r >= rows) return;
  GLOBAL const float* dyr = F32(dy, dyo) + r * n;
  GLOBAL const float* yr = F32(y, yo) + r * n;
  GLOBAL float* dxr = F32(dx, dxo) + r * n;
  acc_t sum = 0;
  for (ulong j = 0; j < n; ++j) sum += dyr[j];
  const float s = (float)sum;
  for (ulong j = 0; j < n; ++j) dxr[j] = dyr[j] - expf(yr[j]) * s;
}

KERNEL layernorm(buf_t x, ulong xo, buf_t gamma, ulong go, buf_t beta, ulong bo, buf_t y,
                 ulong yo, buf_t mean, ulong mo, buf_t rstd, ulong ro, ulong rows, ulong n,
                 float eps) {
  const ulong r = GLOBAL_ID();
  if (r >= rows) return;
  GLOBAL const float* xr = F32(x, xo) + r * n;
  GLOBAL const float* g = F32(gamma, go);
  GLOBAL const float* b = F32(beta, bo);
  GLOBAL float* yr = F32(y, yo) + r * n;
  acc_t sum = 0;
  for (ulong j = 0; j < n; ++j) sum += xr[j];
  const acc_t mu = sum / (acc_t)n;
  acc_t sq = 0;
  for (ulong j = 0; j < n; ++j) {
    const acc_t d = xr[j] - mu;
    sq += d * d;
  }
  const acc_t rs = 1.0 / sqrt(sq / (acc_t)n + (acc_t)eps);
  const float m = (float)mu, s = (float)rs;
  F32(mean, mo)[r] = m;
  F32(rstd, ro)[r] = s;
  for (ulong j = 0; j < n; ++j) yr[j] = (xr[j] - m) * s * g[j] + b[j];
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma; one work item per row.
KERNEL layernorm_grad_dx(buf_t dy, ulong dyo, buf_t x, ulong xo, buf_t mean, ulong mo,
                         buf_t rstd, ulong ro, buf_t gamma, ulong go, buf_t dx, ulong dxo,
                         ulong rows, ulong n) {
  const ulong r = GLOBAL_ID();
  if (r >= rows) return;
  GLOBAL const float* dyr = F32(dy, dyo) + r * n;
  GLOBAL const float* xr = F32(x, xo) + r * n;
  GLOBAL const float* gm = F32(gamma, go);
  GLOBAL float* dxr = F32(dx, dxo) + r * n;
  const float m = F32(mean, mo)[r], s = F32(rstd, ro)[r];
  acc_t sum_g = 0, sum_gx = 0;
  for (ulong j = 0; j < n; ++j) {
    const float g = dyr[j] * gm[j];
    sum_g += g;
    sum_gx += (acc_t)g * ((xr[j] - m) * s);
  }
  const float mean_g = (float)(sum_g / (acc_t)n);
  const float mean_gx = (float)(sum_gx / (acc_t)n);
  for (ulong j = 0; j < n; ++j) {
    const float xhat = (xr[j] - m) * s;
    dxr[j] = s * (dyr[j] * gm[j] - mean_g - xhat * mean_gx);
  }
}

// dgamma, dbeta: one work item per column, rows in order.
KERNEL layernorm_grad_params(buf_t dy, ulong dyo, buf_t x, ulong xo, buf_t mean, ulong mo,
                             buf_t rstd, ulong ro, buf_t dgamma, ulong dgo, buf_t dbeta,
                             ulong dbo, ulong rows, ulong n) {
  const ulong j = GLOBAL_ID();
  if (j >= n) return;
  GLOBAL const float* dyp = F32(dy, dyo);
  GLOBAL const float* xp = F32(x, xo);
  GLOBAL const float* mp = F32(mean, mo);
  GLOBAL const float* sp = F32(rstd, ro);
  acc_t acc_g = 0, acc_b = 0;
  for (ulong r = 0; r < rows; ++r) {
    const float d = dyp[r * n + j];
    const float prod = d * ((xp[r * n + j] - mp[r]) * sp[r]);
    acc_g += prod;
    acc_b += d;
  }
  F32(dgamma, dgo)[j] = (float)acc_g;
  F32(dbeta, dbo)[j] = (float)acc_b;
}
