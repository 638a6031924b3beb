// Launching a kernels/ functor on a CUDA device: one grid-stride kernel template for every functor,
// so the device runs exactly the code the host path runs through Kokkos (kernels/launch.hpp).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace scaletrain::kernels {

template <class F>
__global__ void grid_stride_kernel(int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    f(i);
}

// Runs f(i) for i in [0, n) on `stream`; returns the launch's error (cudaSuccess when n <= 0).
template <class F>
cudaError_t launch_device(int64_t n, const F& f, cudaStream_t stream = nullptr) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  grid_stride_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(n, f);
  return cudaGetLastError();
}

// f(r, p) over rows x packs, consecutive threads on consecutive packs of a row (coalesced on
// channels-last data).
template <class F>
__global__ void grid_stride_rows_kernel(int64_t rows, int64_t packs, F f) {
  const int64_t n = rows * packs;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t r = i / packs;
    f(r, i - r * packs);
  }
}

template <class F>
cudaError_t launch_device_rows(int64_t rows, int64_t packs, const F& f, cudaStream_t stream = nullptr) {
  const int64_t n = rows * packs;
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  grid_stride_rows_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(rows, packs, f);
  return cudaGetLastError();
}

}  // namespace scaletrain::kernels
