// The GPU kernel dialect as OpenCL C 1.2: the first text of the OpenCL program.
//
// backends/gpu/kernels/*.cl are written once against these names and compiled both here and
// as CUDA C++ (dialect_cuda.cuh gives the same names their CUDA meaning). What a name means:
//
//   KERNEL              a kernel entry point (returns void)
//   DEVICE_FN           a function called from kernels
//   GLOBAL, LOCAL_PTR   address space of a pointer to device memory / to work-group memory
//   LOCAL_PARAM(T, n)   a kernel parameter giving work-group memory of T named n; the host
//                       passes its size in bytes. LOCAL_BIND(T, n) opens the kernel body.
//   GLOBAL_ID, LOCAL_ID, LOCAL_SIZE   1-D work-item ids and the work-group size
//   GROUP_ID            the 1-D id of the work item's group
//   LOCAL_BARRIER()     every work item of the group waits, work-group memory is consistent
//   ATOMIC_MIN(p, v)    32-bit signed atomic minimum in device memory
//   FLOAT_FROM_BITS(u), BITS_OF_FLOAT(f)   a uint's bits as a float, and back
//   acc_t               accumulator of sums: double where the device has it
//   uchar, ushort, uint, ulong   fixed-width integers (8, 16, 32, 64 bits), as OpenCL C
//                                names them
//   expf, logf, powf, erff, tanhf, sqrtf   float math (OpenCL's overloaded names take the C99
//                                          ones here)
//   REMAT_GPU_REPLAYED_LAUNCHES   1 where a launch's arguments may be replayed in later steps
#ifndef REMAT_BACKENDS_GPU_DIALECT_H_
#define REMAT_BACKENDS_GPU_DIALECT_H_

// Results must match the CPU kernels' formulas (backends/cpu), so contraction into fused
// multiply-adds is off: a*b+c rounds twice, as on the CPU.
#pragma OPENCL FP_CONTRACT OFF

#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// The CPU kernels sum in double; devices without fp64 sum in float (looser, still ordered).
typedef double acc_t;
#else
typedef float acc_t;
#endif

#define KERNEL __kernel void
// static: C99 inline alone gives no external definition, which a GPU compiler that does not
// inline a call (an unoptimised build) cannot link.
#define DEVICE_FN static inline
#define GLOBAL __global
#define LOCAL_PTR __local
#define LOCAL_PARAM(type, name) __local type* name
#define LOCAL_BIND(type, name)
#define GLOBAL_ID() get_global_id(0)
#define LOCAL_ID() get_local_id(0)
#define GROUP_ID() get_group_id(0)
#define LOCAL_SIZE() get_local_size(0)
#define LOCAL_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define ATOMIC_MIN(p, v) atomic_min((p), (v))
#define FLOAT_FROM_BITS(u) as_float(u)
#define BITS_OF_FLOAT(f) as_uint(f)

#define expf(x) exp(x)
#define logf(x) log(x)
#define powf(x, y) pow(x, y)
#define erff(x) erf(x)
#define tanhf(x) tanh(x)
#define sqrtf(x) sqrt(x)

// OpenCL's queue runs each launch with the arguments it was given.
#define REMAT_GPU_REPLAYED_LAUNCHES 0

#endif  // REMAT_BACKENDS_GPU_DIALECT_H_
