// Shared by every GPU kernel (OpenCL C and CUDA, see dialect_opencl.h): tensor addressing, the
// step state, the report of bad data, work-group sums.
//
// A tensor reaches a kernel as (base, byte offset): OpenCL passes the region's buffer (the
// backend never makes sub-buffers), CUDA the region's base address, so one argument list
// serves both backends (backends/gpu/ops/ops.h).

typedef GLOBAL uchar* buf_t;

#define F32(base, offset) ((GLOBAL float*)((base) + (offset)))
#define I32(base, offset) ((GLOBAL int*)((base) + (offset)))

// Records that op |op| (OpCall::index, OpCode |code|) found a value outside [0, |limit|) at
// |position|. The first op of a step that finds bad data keeps the report: kernels of one
// queue or stream run in order, so a later op sees an earlier op's report, and within one op
// every work item writes the same op, code and limit. The position is an atomic minimum, an
// integer atomic: the report does not depend on the order work items run in.
DEVICE_FN void report_bad(GLOBAL GpuState* s, uint op, uint code, int position, long limit) {
  if (s->error != 0 && s->error != (int)op + 1) return;
  s->error_code = code;
  s->error_limit = limit;
  ATOMIC_MIN(&s->error_position, position);
  s->error = (int)op + 1;
}

// Sums |values|[0, size) of a work-group in a fixed tree order; size is a power of two.
// The result is in values[0] after the call, for every work item.
DEVICE_FN void group_sum(LOCAL_PTR acc_t* values, uint size) {
  const uint lid = LOCAL_ID();
  for (uint stride = size / 2; stride > 0; stride /= 2) {
    LOCAL_BARRIER();
    if (lid < stride) values[lid] += values[lid + stride];
  }
  LOCAL_BARRIER();
}

// Softmax of the |n| values at |x| into |y| as the CPU kernels compute it: the maximum, the
// exponentials summed in order in acc_t, one reciprocal. Returns the maximum and the sum (for
// cross-entropy's log-sum-exp).
DEVICE_FN acc_t softmax_row(GLOBAL const float* x, GLOBAL float* y, ulong n, float* out_max) {
  float mx = x[0];
  for (ulong j = 1; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  acc_t sum = 0;
  for (ulong j = 0; j < n; ++j) {
    const float e = expf(x[j] - mx);
    y[j] = e;
    sum += e;
  }
  const float inv = (float)(1.0 / sum);
  for (ulong j = 0; j < n; ++j) y[j] *= inv;
  *out_max = mx;
  return sum;
}

// One work item: the values of the step about to run (before its first op).
KERNEL set_step(GLOBAL GpuState* s, ulong seed, ulong step) {
  if (GLOBAL_ID() != 0) return;
  s->seed = seed;
  s->step = step;
}

// One work item, after a checking kernel of op |op|: adds the bad value at the reported
// position of |values| (i32) to the report, so that the host reads the whole report at once.
KERNEL report_value(buf_t values, ulong vo, GLOBAL GpuState* s, uint op) {
  if (GLOBAL_ID() != 0) return;
  if (s->error == (int)op + 1) s->error_value = I32(values, vo)[s->error_position];
}
