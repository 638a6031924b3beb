// Launching a kernels/ functor on a CUDA stream from host code compiled by the C++ compiler: the
// declaration only. The definition (a grid-stride kernel, kernels/launch_device.cuh) is compiled by
// nvcc and explicitly instantiated for every functor the layers, optimizers, loss and input
// pipeline launch (src/backend/cuda/device_kernels.cu); a functor missing there is a link error of
// the cuda build, not a failure at run time.
#pragma once
#include <cstdint>

namespace scaletrain::kernels {

// Queues f(i) for i in [0, n) on the cudaStream_t `stream`; throws Error naming `label` and the
// CUDA error when the launch fails.
template <class F>
void launch_cuda(void* stream, const char* label, int64_t n, const F& f);

}  // namespace scaletrain::kernels
