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

// Sums |values|[0, size) of a work-group in a fixed tree order; size is a power of two no
// larger than the group. The result is in values[0] after the call, for every work item.
DEVICE_FN void group_sum(LOCAL_PTR acc_t* values, uint size) {
  const uint lid = LOCAL_ID();
  for (uint stride = size / 2; stride > 0; stride /= 2) {
    LOCAL_BARRIER();
    if (lid < stride) values[lid] += values[lid + stride];
  }
  LOCAL_BARRIER();
}

// Teams: a row kernel gives each row a team of |team| consecutive work items of a group (a
// power of two no larger than the group, chosen by the host: gpu::row_team), so that a long
// row is read by many work items, coalesced, and a short one does not idle a whole group.
// Lane k of a team reads the row's elements k, k + team, k + 2 team, ...; the team combines
// its lanes' values in a fixed tree order, so results depend on the team size and nothing else.
// Every work item of the group must call a team reduction, also those past the last row: the
// reductions wait at work-group barriers.

/// The row of the work item's team.
DEVICE_FN ulong team_row(uint team) {
  return GROUP_ID() * (LOCAL_SIZE() / team) + LOCAL_ID() / team;
}

/// The work item's lane in its team: 0 .. team - 1.
DEVICE_FN uint team_lane(uint team) { return LOCAL_ID() & (team - 1); }

/// The sum of |v| over the work item's team, for every lane; |scratch| holds one float per
/// work item of the group.
DEVICE_FN float team_sum(LOCAL_PTR float* scratch, float v, uint team) {
  const uint lid = LOCAL_ID(), lane = lid & (team - 1);
  scratch[lid] = v;
  for (uint stride = team / 2; stride > 0; stride /= 2) {
    LOCAL_BARRIER();
    if (lane < stride) scratch[lid] += scratch[lid + stride];
  }
  LOCAL_BARRIER();
  const float total = scratch[lid - lane];
  LOCAL_BARRIER();  // The next reduction may overwrite scratch.
  return total;
}

/// The maximum of |v| over the work item's team (as the CPU kernels compare: a > b ? a : b).
DEVICE_FN float team_max(LOCAL_PTR float* scratch, float v, uint team) {
  const uint lid = LOCAL_ID(), lane = lid & (team - 1);
  scratch[lid] = v;
  for (uint stride = team / 2; stride > 0; stride /= 2) {
    LOCAL_BARRIER();
    if (lane < stride) {
      const float other = scratch[lid + stride];
      scratch[lid] = other > scratch[lid] ? other : scratch[lid];
    }
  }
  LOCAL_BARRIER();
  const float total = scratch[lid - lane];
  LOCAL_BARRIER();
  return total;
}

// Channel teams: a per-channel kernel over x viewed as [images, channels, inner] (NCHW) gives
// each channel a team (gpu::row_team of images * inner): the team's row is the channel. Lane k
// walks the channel's flattened positions p = b * inner + i (image b, position i of its plane)
// k, k + team, k + 2 team, ..., so adjacent lanes read adjacent elements of a plane, coalesced
// where inner is large; where inner is small (1 for [N, C]) the lanes' reads are inner apart
// within an image and channels * inner across images: still right, less coalesced. A walk
// steps without a division per element.

/// A lane's walk over its channel's elements: |at| indexes x (in elements) at the lane's
/// current position, |i| is that position within the image's plane.
typedef struct {
  ulong at, i;
  ulong step_at, step_i, wrap, inner;
} ChannelWalk;

/// The walk of lane |lane| of a team of |team| over channel |ch|'s images * inner elements.
DEVICE_FN ChannelWalk channel_walk(ulong ch, ulong channels, ulong inner, uint lane, uint team) {
  ChannelWalk w;
  const ulong plane = channels * inner, q = inner > 0 ? inner : 1;
  w.i = lane % q;
  w.at = (lane / q) * plane + ch * inner + w.i;
  w.step_i = team % q;
  w.step_at = (team / q) * plane + w.step_i;
  w.wrap = plane - inner;  // From past the end of a plane to its channel's next plane.
  w.inner = inner;
  return w;
}

/// Moves |w| |team| positions on.
DEVICE_FN void channel_next(ChannelWalk* w) {
  w->at += w->step_at;
  w->i += w->step_i;
  if (w->i >= w->inner) {
    w->i -= w->inner;
    w->at += w->wrap;
  }
}

/// The maximum of row |x| (|n| elements) over the work item's team, for every lane. A team
/// whose row is not |live| takes part in the reduction only.
DEVICE_FN float team_row_max(LOCAL_PTR float* scratch, GLOBAL const float* x, ulong n, uint team,
                             bool live) {
  const uint lane = team_lane(team);
  float mx = live ? x[lane < n ? lane : 0] : 0.0f;
  for (ulong j = lane; live && j < n; j += team) mx = x[j] > mx ? x[j] : mx;
  return team_max(scratch, mx, team);
}

/// Softmax of row |x| into |y| by the work item's team: the maximum (in |out_max|), the
/// exponentials summed in the team's tree, one reciprocal. Returns the sum, for every lane.
DEVICE_FN float team_softmax_row(LOCAL_PTR float* scratch, GLOBAL const float* x, GLOBAL float* y,
                                 ulong n, uint team, bool live, float* out_max) {
  const uint lane = team_lane(team);
  const float mx = team_row_max(scratch, x, n, team, live);
  float sum = 0.0f;
  for (ulong j = lane; live && j < n; j += team) {
    const float e = expf(x[j] - mx);
    y[j] = e;
    sum += e;
  }
  sum = team_sum(scratch, sum, team);
  const float inv = (float)(1.0 / (acc_t)sum);
  for (ulong j = lane; live && j < n; j += team) y[j] *= inv;
  *out_max = mx;
  return sum;
}

// Column tiles: a column kernel (sums over the rows of each column of a row-major matrix)
// gives each group a tile of tile_width() adjacent columns; the group's work items are
// tile_lanes() row lanes of tile_width() columns, so adjacent work items read adjacent
// addresses. Row lane k sums rows k, k + lanes, k + 2 lanes, ... in order; tile_sum combines
// the lanes in a fixed tree order. The host launches them with Args::launch_column_tiles.

/// Columns per tile: REMAT_GPU_TILE_WIDTH, or the group size where that is smaller.
DEVICE_FN uint tile_width(void) {
  return LOCAL_SIZE() < REMAT_GPU_TILE_WIDTH ? LOCAL_SIZE() : REMAT_GPU_TILE_WIDTH;
}
/// Row lanes per tile.
DEVICE_FN uint tile_lanes(void) { return LOCAL_SIZE() / tile_width(); }
/// The work item's column.
DEVICE_FN ulong tile_column(void) {
  return GROUP_ID() * tile_width() + LOCAL_ID() % tile_width();
}
/// The work item's row lane.
DEVICE_FN uint tile_lane(void) { return LOCAL_ID() / tile_width(); }

/// A blocked column kernel's work item (Args::launch_column_tiles over blocks: the groups run
/// over (block, tile) pairs, block-major): its block's rows [r0, r1) of |rows|, |block_rows| a
/// block, and its column j of |n|, live where j < n.
typedef struct ColumnBlock {
  ulong block, j, r0, r1;
  int live;
} ColumnBlock;

DEVICE_FN ColumnBlock column_block(ulong rows, ulong n, ulong block_rows) {
  ColumnBlock c;
  const ulong tiles = (n + tile_width() - 1) / tile_width();
  c.block = GROUP_ID() / tiles;
  c.j = (GROUP_ID() % tiles) * tile_width() + LOCAL_ID() % tile_width();
  c.live = c.j < n;
  c.r0 = c.block * block_rows;
  c.r1 = c.r0 + block_rows < rows ? c.r0 + block_rows : rows;
  return c;
}

/// The sum of |v| over the row lanes of the work item's column, for every work item; every
/// work item of the group must call it. |scratch| holds one float per work item.
DEVICE_FN float tile_sum(LOCAL_PTR float* scratch, float v) {
  const uint lid = LOCAL_ID(), width = tile_width(), lane = lid / width;
  scratch[lid] = v;
  for (uint stride = tile_lanes() / 2; stride > 0; stride /= 2) {
    LOCAL_BARRIER();
    if (lane < stride) scratch[lid] += scratch[lid + stride * width];
  }
  LOCAL_BARRIER();
  const float total = scratch[lid % width];
  LOCAL_BARRIER();
  return total;
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
