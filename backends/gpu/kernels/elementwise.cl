// Elementwise kernels: activations and their gradients, add/mul/scale, powers, bias, dropout,
// fill, sums over axes and their broadcast, reduce_leading's column sums.
// One work item per element (dropout: per four), except the sums, float sums in a fixed tree
// order: reduce_sum sums column tiles, reduce_sum_rows gives a row a team (common.cl). The
// activations, add, mul, bias and dropout take typed tensors (half.cl: load_element), so that
// they read and write 16-bit tensors as they are (plan/ops.h: gpu_reads_16_bit).

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

// clamp(t, 0, 1), a NaN staying NaN (hard_sigmoid's).
DEVICE_FN float hard_sigmoid_of(float t) { return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t; }

// The unary selectors' formulas (REMAT_GPU_UNARY_OPS in abi.h): y of x = v and the attributes
// |alpha| and |beta| (clip's low and high), as the CPU kernels compute them.
#define REMAT_GPU_UNARY_Relu(v, alpha, beta) (v <= 0.0f ? 0.0f : v)  // NaN stays NaN (the CPU's)
#define REMAT_GPU_UNARY_Gelu(v, alpha, beta) (0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)))
#define REMAT_GPU_UNARY_Tanh(v, alpha, beta) tanhf(v)
#define REMAT_GPU_UNARY_Sigmoid(v, alpha, beta) (1.0f / (1.0f + expf(-v)))
#define REMAT_GPU_UNARY_Scale(v, alpha, beta) (alpha * v)
#define REMAT_GPU_UNARY_Pow(v, alpha, beta) power(v, alpha)
#define REMAT_GPU_UNARY_Sqrt(v, alpha, beta) sqrtf(v)
#define REMAT_GPU_UNARY_LeakyRelu(v, alpha, beta) (v > 0.0f ? v : v * alpha)
#define REMAT_GPU_UNARY_Erf(v, alpha, beta) erff(v)
#define REMAT_GPU_UNARY_Clip(v, alpha, beta) (v < alpha ? alpha : v > beta ? beta : v)  // low, high
#define REMAT_GPU_UNARY_HardSigmoid(v, alpha, beta) hard_sigmoid_of(alpha * v + beta)
// allreduce_wait's mean over the ranks: correctly rounded, as the CPU's, on CUDA and on OpenCL
// devices that offer it (opencl_backend.cc builds with -cl-fp32-correctly-rounded-divide-sqrt
// there; OpenCL C otherwise allows 2.5 ulp).
#define REMAT_GPU_UNARY_Divide(v, alpha, beta) (v / alpha)

// Unary ops, selected by |op| (GpuUnary in abi.h).
KERNEL unary_op(int op, float alpha, float beta, buf_t x, ulong xo, int xt, buf_t y, ulong yo,
                int yt, ulong n) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  const float v = load_element(x, xo, xt, i);
  float r = 0.0f;
  switch (op) {
#define REMAT_GPU_UNARY_CASE(name) \
  case kGpu##name: r = REMAT_GPU_UNARY_##name(v, alpha, beta); break;
    REMAT_GPU_UNARY_OPS(REMAT_GPU_UNARY_CASE)
#undef REMAT_GPU_UNARY_CASE
  }
  store_element(y, yo, yt, i, r);
}

// gelu's derivative times dy |u| at x |v|.
DEVICE_FN float gelu_grad_of(float u, float v) {
  const float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752440f));
  const float pdf = 0.39894228040143267794f * expf(-0.5f * v * v);
  return u * (cdf + v * pdf);
}

// The binary selectors' formulas (REMAT_GPU_BINARY_OPS in abi.h): c of a = u, b = v and the
// attributes |alpha| and |beta|; the gradients take (dy, y) or (dy, x) as said.
#define REMAT_GPU_BINARY_Add(u, v, alpha, beta) (u + v)
#define REMAT_GPU_BINARY_Mul(u, v, alpha, beta) (u * v)
#define REMAT_GPU_BINARY_ReluGrad(u, v, alpha, beta) (v <= 0.0f ? 0.0f : u)  // (dy, y); y NaN passes
#define REMAT_GPU_BINARY_GeluGrad(u, v, alpha, beta) gelu_grad_of(u, v)        // (dy, x)
#define REMAT_GPU_BINARY_TanhGrad(u, v, alpha, beta) (u * (1.0f - v * v))      // (dy, y)
#define REMAT_GPU_BINARY_SigmoidGrad(u, v, alpha, beta) (u * v * (1.0f - v))   // (dy, y)
#define REMAT_GPU_BINARY_MseGrad(u, v, alpha, beta) (alpha * (u - v))          // (pred, target)
#define REMAT_GPU_BINARY_PowGrad(u, v, alpha, beta) \
  (alpha == 0.0f ? u * 0.0f : u * (alpha * power(v, alpha - 1.0f)))  // (dy, x), alpha the exponent
#define REMAT_GPU_BINARY_SqrtGrad(u, v, alpha, beta) (u / (2.0f * v))              // (dy, y)
#define REMAT_GPU_BINARY_LeakyReluGrad(u, v, alpha, beta) (v > 0.0f ? u : u * alpha)  // (dy, x)
#define REMAT_GPU_BINARY_ErfGrad(u, v, alpha, beta) \
  (1.12837916709551257390f * expf(-v * v) * u)  // (dy, x)
#define REMAT_GPU_BINARY_ClipGrad(u, v, alpha, beta) \
  (alpha < v && v < beta ? u : 0.0f)  // (dy, x), alpha and beta clip's low and high
#define REMAT_GPU_BINARY_HardSigmoidGrad(u, v, alpha, beta) \
  (0.0f < alpha * v + beta && alpha * v + beta < 1.0f ? alpha * u : 0.0f)  // (dy, x)

// Binary ops c = f(a, b), selected by |op| (GpuBinary in abi.h).
KERNEL binary_op(int op, float alpha, float beta, buf_t a, ulong ao, int at, buf_t b, ulong bo,
                 int bt, buf_t c, ulong co, int ct, ulong n) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  const float u = load_element(a, ao, at, i), v = load_element(b, bo, bt, i);
  float r = 0.0f;
  switch (op) {
#define REMAT_GPU_BINARY_CASE(name) \
  case kGpu##name: r = REMAT_GPU_BINARY_##name(u, v, alpha, beta); break;
    REMAT_GPU_BINARY_OPS(REMAT_GPU_BINARY_CASE)
#undef REMAT_GPU_BINARY_CASE
  }
  store_element(c, co, ct, i, r);
}

KERNEL bias_add(buf_t x, ulong xo, int xt, buf_t b, ulong bo, int bt, buf_t y, ulong yo, int yt,
                ulong n, ulong nb) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  store_element(y, yo, yt, i, load_element(x, xo, xt, i) + load_element(b, bo, bt, i % nb));
}

// One work item per four elements. Element i draws the word of element first + i of the stream
// (a data-parallel rank's elements are elements first.. of the whole batch's, StepContext::rank):
// where first is a multiple of four, one Philox call (plan/philox.h) gives the four words. Seed
// and step come from the state: under CUDA graph replay they change every step.
KERNEL dropout(buf_t x, ulong xo, int xt, buf_t y, ulong yo, int yt, ulong n, ulong first,
               ulong key, float p, GLOBAL const GpuState* state) {
  const ulong i = GLOBAL_ID() * 4;
  if (i >= n) return;
  const ulong seed = state->seed, step = state->step;
  const bool aligned = (first & 3) == 0;
  Philox4 r = {{0u, 0u, 0u, 0u}};
  if (aligned) r = philox_group(seed, step, key, first + i);
  const float keep_scale = 1.0f - p;
  for (int j = 0; j < 4 && i + j < n; ++j) {
    const uint word = aligned ? r.v[j] : philox_word(seed, step, key, first + i + j);
    const float v = load_element(x, xo, xt, i + j);
    store_element(y, yo, yt, i + j, uniform01(word) >= p ? v / keep_scale : v * 0.0f);
  }
}

// A persistent tensor's initial values (GpuInit |kind|), the bytes runtime/param_init.cc draws
// on the host: one work item per four 4-byte words, one Philox call for kGpuInitUniform.
KERNEL init_draw(buf_t y, ulong yo, ulong words, int kind, float scale, ulong seed,
                 uint tensor) {
  const ulong i = GLOBAL_ID() * 4;
  if (i >= words) return;
  GLOBAL float* dst = F32(y, yo);
  if (kind != kGpuInitUniform) {
    const float value = kind == kGpuInitOnes ? 1.0f : 0.0f;
    for (int j = 0; j < 4 && i + j < words; ++j) dst[i + j] = value;
    return;
  }
  const Philox4 r = philox_group(seed, REMAT_PHILOX_INIT_STEP, tensor, i);
  for (int j = 0; j < 4 && i + j < words; ++j) dst[i + j] = uniform_init(r.v[j], scale);
}

KERNEL fill(buf_t y, ulong yo, ulong n, float value) {
  const ulong i = GLOBAL_ID();
  if (i >= n) return;
  F32(y, yo)[i] = value;
}

// Sums over the middle of x viewed as [outer, n, inner], divided by n where |mean|: the
// output's scalar formed in acc_t from a float sum in a fixed tree order.
DEVICE_FN float sum_or_mean(float sum, ulong n, int mean) {
  return mean ? (float)((acc_t)sum / (acc_t)n) : sum;
}

// inner == 1: rows of n, a team of work items per row (common.cl).
KERNEL reduce_sum_rows(buf_t x, ulong xo, buf_t y, ulong yo, ulong rows, ulong n, int mean,
                       uint team, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong r = team_row(team);
  const uint lane = team_lane(team);
  const bool live = r < rows;
  GLOBAL const float* src = F32(x, xo) + (live ? r : 0) * n;
  float sum = 0.0f;
  for (ulong j = lane; live && j < n; j += team) sum += src[j];
  sum = team_sum(scratch, sum, team);
  if (live && lane == 0) F32(y, yo)[r] = sum_or_mean(sum, n, mean);
}

// inner > 1: the outputs k = o * inner + i are the columns of column tiles (common.cl), whose
// row lanes step over j; adjacent work items read adjacent i.
KERNEL reduce_sum(buf_t x, ulong xo, buf_t y, ulong yo, ulong outer, ulong n, ulong inner,
                  int mean, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ulong k = tile_column();
  const bool live = k < outer * inner;
  const ulong o = live ? k / inner : 0, i = live ? k % inner : 0;
  GLOBAL const float* src = F32(x, xo) + o * n * inner + i;
  float sum = 0.0f;
  for (ulong j = tile_lane(); live && j < n; j += tile_lanes()) sum += src[j * inner];
  sum = tile_sum(scratch, sum);
  if (live && tile_lane() == 0) F32(y, yo)[k] = sum_or_mean(sum, n, mean);
}

// reduce_leading's column sums of dy viewed as [rows, n], for one block of |block_rows| rows
// (plan/gpu_scratch.h): the block's partial sums by column tiles (common.cl) into
// partial[block][j] of the workspace, which column_blocks_sum (norm.cl) adds. The groups run
// over (block, tile) pairs.
KERNEL column_block_partials(buf_t dy, ulong dyo, int dyt, buf_t partial, ulong po, ulong rows,
                             ulong n, ulong block_rows, LOCAL_PARAM(float, scratch)) {
  LOCAL_BIND(float, scratch);
  const ColumnBlock c = column_block(rows, n, block_rows);
  float sum = 0.0f;
  for (ulong r = c.r0 + tile_lane(); c.live && r < c.r1; r += tile_lanes())
    sum += load_element(dy, dyo, dyt, r * n + c.j);
  sum = tile_sum(scratch, sum);
  if (c.live && tile_lane() == 0) F32(partial, po)[c.block * n + c.j] = sum;
}

// One work item per element of y viewed as [outer, n, inner].
KERNEL broadcast(buf_t x, ulong xo, buf_t y, ulong yo, ulong outer, ulong n, ulong inner,
                 int mean) {
  const ulong k = GLOBAL_ID();
  if (k >= outer * n * inner) return;
  const float v = F32(x, xo)[(k / (n * inner)) * inner + k % inner];
  F32(y, yo)[k] = mean ? v / (float)n : v;
}
