// The GPU kernel dialect as CUDA C++: the names of dialect_opencl.h (which documents them)
// with their CUDA meaning. Included by backends/cuda/gpu_kernels.cu before the kernel files,
// inside namespace remat::gpu, so that the short type names cannot meet the system's.
#ifndef REMAT_BACKENDS_GPU_DIALECT_H_
#define REMAT_BACKENDS_GPU_DIALECT_H_

// Contraction: nvcc is given -fmad=false (backends/cuda/meson.build), the counterpart of
// OpenCL's FP_CONTRACT OFF: a*b+c rounds twice, as on the CPU. Division and sqrt are IEEE
// rounded (nvcc's default -prec-div=true -prec-sqrt=true), like OpenCL's
// -cl-fp32-correctly-rounded-divide-sqrt.

typedef double acc_t;
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long long ulong;

#define KERNEL __global__ void
#define DEVICE_FN __device__ inline
#define GLOBAL
#define LOCAL_PTR
// CUDA has no kernel parameter in shared memory: the parameter is the size in bytes the host
// passed (the launcher also gives it as the launch's dynamic shared memory), and LOCAL_BIND
// names that memory.
#define LOCAL_PARAM(type, name) ulong name##_bytes
#define LOCAL_BIND(type, name)   \
  extern __shared__ type name[]; \
  (void)name##_bytes
#define GLOBAL_ID() ((ulong)blockIdx.x * blockDim.x + threadIdx.x)
#define LOCAL_ID() ((uint)threadIdx.x)
#define GROUP_ID() ((ulong)blockIdx.x)
#define LOCAL_SIZE() ((uint)blockDim.x)
#define LOCAL_BARRIER() __syncthreads()
#define ATOMIC_MIN(p, v) atomicMin((p), (v))
#define FLOAT_FROM_BITS(u) __uint_as_float(u)
#define BITS_OF_FLOAT(f) __float_as_uint(f)

// A captured CUDA graph replays every launch with the arguments of the captured step.
#define REMAT_GPU_REPLAYED_LAUNCHES 1

#endif  // REMAT_BACKENDS_GPU_DIALECT_H_
