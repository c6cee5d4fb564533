// Loss kernels. The scalar losses run as one work-group that sums per-item partials in a fixed
// tree order: deterministic for a given work-group size (chosen once per device).

// One work-group of teams (common.cl): team t of the group's teams = size / team takes rows
// t, t + teams, t + 2 teams, ... and reads each with its lanes. The row's loss term is formed
// in acc_t by the team's lane 0, which keeps its team's total in acc_t; group_sum adds the
// teams' totals in a fixed tree order. CUDA gives a launch one block of work-group memory
// (dialect_cuda.cuh), so the team reductions' float scratch is the acc_t partials' memory seen
// as floats: the two are used apart, a barrier between them. A row with a bad label is
// reported (by lane 0) and skipped by its whole team, whose lanes still reach every barrier.
KERNEL cross_entropy(buf_t logits, ulong lo, buf_t labels, ulong lbo, buf_t loss, ulong losso,
                     buf_t probs, ulong po, ulong rows, ulong c, GLOBAL GpuState* state,
                     uint op, uint code, uint team, LOCAL_PARAM(acc_t, partial)) {
  LOCAL_BIND(acc_t, partial);
  LOCAL_PTR float* scratch = (LOCAL_PTR float*)partial;
  const uint teams = LOCAL_SIZE() / team, t = LOCAL_ID() / team, lane = team_lane(team);
  acc_t total = 0;
  for (ulong first = 0; first < rows; first += teams) {
    const ulong r = first + t;
    const int label = r < rows ? I32(labels, lbo)[r] : 0;
    const bool bad = r < rows && (label < 0 || (ulong)label >= c);
    if (bad && lane == 0) report_bad(state, op, code, (int)r, (long)c);
    const bool live = r < rows && !bad;
    GLOBAL const float* x = F32(logits, lo) + (live ? r : 0) * c;
    GLOBAL float* p = F32(probs, po) + (live ? r : 0) * c;
    float mx;
    const float sum = team_softmax_row(scratch, x, p, c, team, live, &mx);
    if (live && lane == 0) total -= (acc_t)x[label] - (acc_t)mx - log((acc_t)sum);
  }
  // The last team reduction ended at a barrier: no work item reads scratch any more.
  if (lane == 0) partial[t] = total;
  group_sum(partial, teams);
  if (LOCAL_ID() == 0) F32(loss, losso)[0] = rows > 0 ? (float)(partial[0] / (acc_t)rows) : 0.0f;
}

// A team of work items per row (no reductions: the team only spreads the row over coalesced
// lanes); a row with a bad label gets zeros.
KERNEL cross_entropy_grad(buf_t probs, ulong po, buf_t labels, ulong lbo, buf_t dlogits,
                          ulong dlo, ulong rows, ulong c, float inv_n, GLOBAL GpuState* state,
                          uint op, uint code, uint team) {
  const ulong r = team_row(team);
  if (r >= rows) return;
  const uint lane = team_lane(team);
  const int label = I32(labels, lbo)[r];
  GLOBAL const float* p = F32(probs, po) + r * c;
  GLOBAL float* d = F32(dlogits, dlo) + r * c;
  if (label < 0 || (ulong)label >= c) {
    if (lane == 0) report_bad(state, op, code, (int)r, (long)c);
    for (ulong j = lane; j < c; j += team) d[j] = 0.0f;
    return;
  }
  for (ulong j = lane; j < c; j += team) {
    d[j] = j == (ulong)label ? (p[j] - 1.0f) * inv_n : p[j] * inv_n;
  }
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
