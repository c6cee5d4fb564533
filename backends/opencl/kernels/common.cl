// Shared by every OpenCL kernel of remat: tensor addressing, accumulator type, Philox.
//
// A tensor reaches a kernel as (buffer, byte offset): the backend allocates one arena and one
// persistent buffer and never makes sub-buffers. Results must match the CPU kernels' formulas
// (backends/cpu), so contraction into fused multiply-adds is off: a*b+c rounds twice, as on
// the CPU.
#pragma OPENCL FP_CONTRACT OFF

#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// The CPU kernels sum in double; devices without fp64 sum in float (looser, still ordered).
typedef double acc_t;
#else
typedef float acc_t;
#endif

typedef __global uchar* buf_t;

#define F32(base, offset) ((__global float*)((base) + (offset)))
#define I32(base, offset) ((__global int*)((base) + (offset)))

// Error flags of data-dependent checks: [0] set to 1 on failure, [1] the first bad position.
// Positions use atomic_min, an integer atomic: no float result depends on it.
inline void flag_bad(__global int* flags, int position) {
  flags[0] = 1;
  atomic_min(&flags[1], position);
}

// Philox4x32-10, the same rounds as src/plan/philox.h.
inline uint4 philox4x32(uint4 c, uint2 k) {
  for (int round = 0; round < 10; ++round) {
    const uint hi0 = mul_hi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const uint hi1 = mul_hi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += (uint2)(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

inline float uniform01(uint word) { return (float)(word >> 8) * (1.0f / 16777216.0f); }

// Sums |values|[0, size) of a work-group in a fixed tree order; size is a power of two.
// The result is in values[0] after the call, for every work item.
inline void group_sum(__local acc_t* values, uint size) {
  const uint lid = get_local_id(0);
  for (uint stride = size / 2; stride > 0; stride /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < stride) values[lid] += values[lid + stride];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
