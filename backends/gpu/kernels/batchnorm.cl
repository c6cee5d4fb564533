// Batch normalisation over the channels of [N, C, inner]: the per-channel sums give each channel
// a team of work items (common.cl's channel teams; float sums in the team's tree order, the
// mean and variance formed from them in acc_t), the elementwise parts one work item per
// element. The [N, C, inner] tensors are typed (half.cl: load_element, store_element), the
// per-channel ones float32. The running statistics' update and the batch counter's increment skip themselves
// after a failed finite check, like the optimizer updates (optim.cl).

// rstd from the stored variance, the same in the forward and the backward op.
DEVICE_FN float bn_rstd(float var, float eps) {
  return (float)(1.0 / sqrt((acc_t)var + (acc_t)eps));
}

// mean[ch] and the biased var[ch] of x, two passes, a team per channel.
KERNEL batch_norm_stats(buf_t x, ulong xo, int xt, buf_t mean, ulong mo, buf_t var, ulong vo,
                        ulong images, ulong channels, ulong inner, uint team,
                        LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong ch = team_row(team);
  const uint lane = team_lane(team);
  const bool live = ch < channels;
  const ulong count = images * inner;
  const ChannelWalk start = channel_walk(live ? ch : 0, channels, inner, lane, team);
  ChannelWalk w = start;
  float sum = 0.0f;
  for (ulong p = lane; live && p < count; p += team) {
    sum += load_element(x, xo, xt, w.at);
    channel_next(&w);
  }
  const acc_t mu = (acc_t)team_sum(scratch, sum, team) / (acc_t)count;
  const float m = (float)mu;
  w = start;
  float sq = 0.0f;
  for (ulong p = lane; live && p < count; p += team) {
    const float d = load_element(x, xo, xt, w.at) - m;
    sq += d * d;
    channel_next(&w);
  }
  sq = team_sum(scratch, sq, team);
  if (live && lane == 0) {
    F32(mean, mo)[ch] = m;
    F32(var, vo)[ch] = (float)((acc_t)sq / (acc_t)count);
  }
}

// y = (x - mean) * rstd * gamma + beta, after batch_norm_stats.
KERNEL batch_norm_apply(buf_t x, ulong xo, int xt, buf_t gamma, ulong go, buf_t beta, ulong bo,
                        buf_t mean, ulong mo, buf_t var, ulong vo, buf_t y, ulong yo, int yt,
                        ulong total, ulong channels, ulong inner, float eps) {
  const ulong i = GLOBAL_ID();
  if (i >= total) return;
  const ulong ch = i / inner % channels;
  const float s = bn_rstd(F32(var, vo)[ch], eps);
  store_element(y, yo, yt, i,
                (load_element(x, xo, xt, i) - F32(mean, mo)[ch]) * s * F32(gamma, go)[ch] +
                    F32(beta, bo)[ch]);
}

// dbeta[ch] = sum(dy), dgamma[ch] = sum(dy * xhat), a team per channel.
KERNEL batch_norm_grad_params(buf_t dy, ulong dyo, int dyt, buf_t x, ulong xo, int xt,
                              buf_t mean, ulong mo,
                              buf_t var, ulong vo, buf_t dgamma, ulong dgo, buf_t dbeta,
                              ulong dbo, ulong images, ulong channels, ulong inner, float eps,
                              uint team, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong ch = team_row(team);
  const uint lane = team_lane(team);
  const bool live = ch < channels;
  const ulong count = images * inner;
  const float m = live ? F32(mean, mo)[ch] : 0.0f;
  const float s = live ? bn_rstd(F32(var, vo)[ch], eps) : 0.0f;
  ChannelWalk w = channel_walk(live ? ch : 0, channels, inner, lane, team);
  float sum_dy = 0.0f, sum_dy_xhat = 0.0f;
  for (ulong p = lane; live && p < count; p += team) {
    const float g = load_element(dy, dyo, dyt, w.at);
    sum_dy += g;
    sum_dy_xhat += g * ((load_element(x, xo, xt, w.at) - m) * s);
    channel_next(&w);
  }
  sum_dy = team_sum(scratch, sum_dy, team);
  sum_dy_xhat = team_sum(scratch, sum_dy_xhat, team);
  if (live && lane == 0) {
    F32(dbeta, dbo)[ch] = sum_dy;
    F32(dgamma, dgo)[ch] = sum_dy_xhat;
  }
}

// dx = rstd * gamma * (dy - mean(dy) - xhat * mean(dy * xhat)), after batch_norm_grad_params:
// the means come from the stored dbeta and dgamma (the CPU divides the unrounded sums: the
// means may differ in their last bit).
KERNEL batch_norm_grad_dx(buf_t dy, ulong dyo, int dyt, buf_t x, ulong xo, int xt, buf_t mean,
                          ulong mo, buf_t var, ulong vo, buf_t gamma, ulong go, buf_t dgamma,
                          ulong dgo, buf_t dbeta, ulong dbo, buf_t dx, ulong dxo, int dxt,
                          ulong total,
                          ulong channels, ulong inner, float eps) {
  const ulong i = GLOBAL_ID();
  if (i >= total) return;
  const ulong ch = i / inner % channels;
  const acc_t count = (acc_t)(total / channels);
  const float m = F32(mean, mo)[ch], s = bn_rstd(F32(var, vo)[ch], eps);
  const float mean_dy = (float)(F32(dbeta, dbo)[ch] / count);
  const float mean_dy_xhat = (float)(F32(dgamma, dgo)[ch] / count);
  const float scale = s * F32(gamma, go)[ch];
  const float xhat = (load_element(x, xo, xt, i) - m) * s;
  store_element(dx, dxo, dxt, i,
                scale * (load_element(dy, dyo, dyt, i) - mean_dy - xhat * mean_dy_xhat));
}

// y = x * a + b per channel, a = gamma / sqrt(running_var + eps) and b = beta - running_mean
// * a worked out in acc_t and rounded once (the CPU kernel's double).
KERNEL batch_norm_inference(buf_t x, ulong xo, int xt, buf_t gamma, ulong go, buf_t beta,
                            ulong bo, buf_t running_mean, ulong rmo, buf_t running_var, ulong rvo,
                            buf_t y, ulong yo, int yt, ulong total, ulong channels, ulong inner,
                            float eps) {
  const ulong i = GLOBAL_ID();
  if (i >= total) return;
  const ulong ch = i / inner % channels;
  const acc_t rv = F32(running_var, rvo)[ch], rm = F32(running_mean, rmo)[ch];
  const acc_t scale = (acc_t)F32(gamma, go)[ch] / sqrt(rv + (acc_t)eps);
  const float a = (float)scale;
  const float b = (float)((acc_t)F32(beta, bo)[ch] - rm * scale);
  store_element(y, yo, yt, i, load_element(x, xo, xt, i) * a + b);
}

// running = (1 - momentum) * running + momentum * (correction * batch) in acc_t, in place
// (each element read before it is written); skipped when the step has reported bad data.
KERNEL running_stat_update(buf_t running, ulong ro, buf_t batch, ulong bo, buf_t out, ulong oo,
                           ulong n, float momentum, float correction,
                           GLOBAL const GpuState* state) {
  const ulong i = GLOBAL_ID();
  if (i >= n || state->error != 0) return;
  const acc_t m = momentum, r = F32(running, ro)[i], b = F32(batch, bo)[i];
  F32(out, oo)[i] = (float)((1.0 - m) * r + m * ((acc_t)correction * b));
}

// counter += 1 on an i64 [1] (num_batches_tracked), in place; one work item, skipped when the
// step has reported bad data.
KERNEL increment(buf_t counter, ulong co, buf_t out, ulong oo, GLOBAL const GpuState* state) {
  if (GLOBAL_ID() != 0 || state->error != 0) return;
  *(GLOBAL REMAT_GPU_I64*)(out + oo) = *(GLOBAL const REMAT_GPU_I64*)(counter + co) + 1;
}
