// Launching a kernels/ functor on a stream: f(i) for i in [0, n). On the CPU backend it runs at
// once through Kokkos on the host execution space; on the simulated device the stream's worker
// thread runs it the same way, in order with the stream's other work; on a CUDA stream the same
// functor runs as a grid-stride kernel (kernels/launch_cuda.hpp, kernels/launch_device.cuh).
#pragma once
#include <cstdint>

#include "scaletrain/backend/stream.hpp"
#include "scaletrain/kernels/launch.hpp"
#if SCALETRAIN_HAVE_CUDA
#include "scaletrain/kernels/launch_cuda.hpp"
#endif

namespace scaletrain {

template <class F>
void launch(Stream& stream, const char* label, int64_t n, const F& f) {
  if (n <= 0) return;
  stream.counters().call();
  if (stream.runs_inline()) {
    kernels::launch_host(label, n, f);
    return;
  }
#if SCALETRAIN_HAVE_CUDA
  if (void* cuda_stream = stream.cuda_handle()) {
    kernels::launch_cuda(cuda_stream, label, n, f);
    return;
  }
#endif
  stream.enqueue_kernel(label, [label, n, f] { kernels::launch_host(label, n, f); });
}

}  // namespace scaletrain
