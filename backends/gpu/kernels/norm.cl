// Row-wise normalisations over the last axis: softmax, log-softmax, layer norm and their
// gradients.

// The row kernels take (rows, n, team) and work-group scratch: one team of work items per row
// (common.cl), float sums in the teams' tree order. The per-row scalars (a mean, a reciprocal
// square root) are formed in acc_t from those sums, as the CPU kernels form them.

KERNEL softmax(buf_t x, ulong xo, buf_t y, ulong yo, ulong rows, ulong n, uint team,
               LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const bool live = r < rows;
  float mx;
  team_softmax_row(scratch, F32(x, xo) + (live ? r : 0) * n, F32(y, yo) + (live ? r : 0) * n, n,
                   team, live, &mx);
}

KERNEL softmax_grad(buf_t dy, ulong dyo, buf_t y, ulong yo, buf_t dx, ulong dxo, ulong rows,
                    ulong n, uint team, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  GLOBAL const float* dyr = F32(dy, dyo) + (live ? r : 0) * n;
  GLOBAL const float* yr = F32(y, yo) + (live ? r : 0) * n;
  GLOBAL float* dxr = F32(dx, dxo) + (live ? r : 0) * n;
  float dot = 0.0f;
  for (ulong j = lane; live && j < n; j += team) dot += dyr[j] * yr[j];
  const float d = team_sum(scratch, dot, team);
  for (ulong j = lane; live && j < n; j += team) dxr[j] = yr[j] * (dyr[j] - d);
}

KERNEL log_softmax(buf_t x, ulong xo, buf_t y, ulong yo, ulong rows, ulong n, uint team,
                   LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  GLOBAL const float* xr = F32(x, xo) + (live ? r : 0) * n;
  GLOBAL float* yr = F32(y, yo) + (live ? r : 0) * n;
  const float mx = team_row_max(scratch, xr, n, team, live);
  float sum = 0.0f;
  for (ulong j = lane; live && j < n; j += team) sum += expf(xr[j] - mx);
  sum = team_sum(scratch, sum, team);
  const float log_sum = (float)log((acc_t)sum);
  for (ulong j = lane; live && j < n; j += team) yr[j] = (xr[j] - mx) - log_sum;
}

KERNEL log_softmax_grad(buf_t dy, ulong dyo, buf_t y, ulong yo, buf_t dx, ulong dxo, ulong rows,
                        ulong n, uint team, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  GLOBAL const float* dyr = F32(dy, dyo) + (live ? r : 0) * n;
  GLOBAL const float* yr = F32(y, yo) + (live ? r : 0) * n;
  GLOBAL float* dxr = F32(dx, dxo) + (live ? r : 0) * n;
  float sum = 0.0f;
  for (ulong j = lane; live && j < n; j += team) sum += dyr[j];
  const float s = team_sum(scratch, sum, team);
  for (ulong j = lane; live && j < n; j += team) dxr[j] = dyr[j] - expf(yr[j]) * s;
}

// Layer norm and its gradient take typed tensors (half.cl: load_element): they read and write
// 16-bit rows as they are (plan/ops.h: gpu_reads_16_bit). Row r's element j is at r * n + j.
KERNEL layernorm(buf_t x, ulong xo, int xt, buf_t gamma, ulong go, int gt, buf_t beta, ulong bo,
                 int bt, buf_t y, ulong yo, int yt, buf_t mean, ulong mo, int mt, buf_t rstd,
                 ulong ro, int rt, ulong rows, ulong n, float eps, uint team,
                 LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  const ulong row = (live ? r : 0) * n;
  float sum = 0.0f;
  for (ulong j = lane; live && j < n; j += team) sum += load_element(x, xo, xt, row + j);
  const float m = (float)((acc_t)team_sum(scratch, sum, team) / (acc_t)n);
  float sq = 0.0f;
  for (ulong j = lane; live && j < n; j += team) {
    const float d = load_element(x, xo, xt, row + j) - m;
    sq += d * d;
  }
  sq = team_sum(scratch, sq, team);
  const float s = (float)(1.0 / sqrt((acc_t)sq / (acc_t)n + (acc_t)eps));
  if (live && lane == 0) {
    store_element(mean, mo, mt, r, m);
    store_element(rstd, ro, rt, r, s);
  }
  for (ulong j = lane; live && j < n; j += team) {
    const float xj = load_element(x, xo, xt, row + j);
    store_element(y, yo, yt, row + j,
                  (xj - m) * s * load_element(gamma, go, gt, j) + load_element(beta, bo, bt, j));
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
KERNEL layernorm_grad_dx(buf_t dy, ulong dyo, int dyt, buf_t x, ulong xo, int xt, buf_t mean,
                         ulong mo, int mt, buf_t rstd, ulong ro, int rt, buf_t gamma, ulong go,
                         int gt, buf_t dx, ulong dxo, int dxt, ulong rows, ulong n, uint team,
                         LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  const ulong row = (live ? r : 0) * n;
  const float m = live ? load_element(mean, mo, mt, r) : 0.0f;
  const float s = live ? load_element(rstd, ro, rt, r) : 0.0f;
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (ulong j = lane; live && j < n; j += team) {
    const float g = load_element(dy, dyo, dyt, row + j) * load_element(gamma, go, gt, j);
    sum_g += g;
    sum_gx += g * ((load_element(x, xo, xt, row + j) - m) * s);
  }
  const float mean_g = (float)((acc_t)team_sum(scratch, sum_g, team) / (acc_t)n);
  const float mean_gx = (float)((acc_t)team_sum(scratch, sum_gx, team) / (acc_t)n);
  for (ulong j = lane; live && j < n; j += team) {
    const float xhat = (load_element(x, xo, xt, row + j) - m) * s;
    const float g = load_element(dy, dyo, dyt, row + j) * load_element(gamma, go, gt, j);
    store_element(dx, dxo, dxt, row + j, s * (g - mean_g - xhat * mean_gx));
  }
}

// dgamma, dbeta of one block of |block_rows| rows (plan/gpu_scratch.h): the block's partial sums,
// column tiles (common.cl) over the block's rows, into partial[0][block][j] (dgamma) and
// partial[1][block][j] (dbeta) of the workspace. The groups run over (block, tile) pairs.
KERNEL layernorm_grad_params(buf_t dy, ulong dyo, int dyt, buf_t x, ulong xo, int xt,
                             buf_t mean, ulong mo, int mt, buf_t rstd, ulong ro, int rt,
                             buf_t partial, ulong po, ulong rows, ulong n, ulong blocks,
                             ulong block_rows, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ColumnBlock c = column_block(rows, n, block_rows);
  const ulong block = c.block, j = c.j;
  const bool live = c.live != 0;
  float acc_g = 0.0f, acc_b = 0.0f;
  for (ulong r = c.r0 + tile_lane(); live && r < c.r1; r += tile_lanes()) {
    const float d = load_element(dy, dyo, dyt, r * n + j);
    const float xhat = (load_element(x, xo, xt, r * n + j) - load_element(mean, mo, mt, r)) *
                       load_element(rstd, ro, rt, r);
    acc_g += d * xhat;
    acc_b += d;
  }
  acc_g = tile_sum(scratch, acc_g);
  acc_b = tile_sum(scratch, acc_b);
  if (live && tile_lane() == 0) {
    F32(partial, po)[block * n + j] = acc_g;
    F32(partial, po)[(blocks + block) * n + j] = acc_b;
  }
}

// y0[j] (and y1[j] where |sets| is 2): the blocks' partial sums of column j, partial[0] (and
// partial[1]) of [sets, blocks, n] floats, added in block order; one work item per column.
// Layer norm's dgamma and dbeta, reduce_leading's db (elementwise.cl: column_block_partials).
KERNEL column_blocks_sum(buf_t partial, ulong po, buf_t y0, ulong y0o, int y0t, buf_t y1, ulong y1o,
                         int y1t, ulong n, ulong blocks, uint sets) {
  const ulong j = GLOBAL_ID();
  if (j >= n) return;
  GLOBAL const float* p = F32(partial, po);
  float s0 = 0.0f, s1 = 0.0f;
  for (ulong k = 0; k < blocks; ++k) {
    s0 += p[k * n + j];
    if (sets == 2) s1 += p[(blocks + k) * n + j];
  }
  store_element(y0, y0o, y0t, j, s0);
  if (sets == 2) store_element(y1, y1o, y1t, j, s1);
}
