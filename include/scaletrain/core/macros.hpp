// Portability macros shared by host and device code: SCALETRAIN_HOST_DEVICE marks functions that
// nvcc must compile for both sides (the kernels/ functors); plain C++ compilers see nothing.
// SCALETRAIN_RESTRICT promises that a pointer's data is reached through it alone, which lets the host
// compiler vectorize loops that write through one pointer and read through others.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SCALETRAIN_HOST_DEVICE __host__ __device__
#define SCALETRAIN_INLINE __host__ __device__ __forceinline__
#else
#define SCALETRAIN_HOST_DEVICE
#define SCALETRAIN_INLINE inline
#endif

#define SCALETRAIN_RESTRICT __restrict__

// Before a loop of a compile-time count (a pack's values): unrolled completely, so that the host
// compiler sees the element pass's loop around it as one simple loop and vectorizes it.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define SCALETRAIN_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__) || defined(__HIPCC__)
#define SCALETRAIN_UNROLL  // nvcc's host pass knows no GCC pragmas, and runs no pack loops
#else
#define SCALETRAIN_UNROLL _Pragma("GCC unroll 16")
#endif
