// Launching a kernels/ functor on a stream: f(i) for i in [0, n). On the CPU backend it runs at
// once through Kokkos on the host execution space; on the simulated device the stream's worker
// thread runs it the same way, in order with the stream's other work. (The CUDA backend launches
// the same functor grid-stride on its stream: kernels/launch_device.cuh.)
#pragma once
#include <cstdint>

#include "scaletrain/backend/stream.hpp"
#include "scaletrain/kernels/launch.hpp"

namespace scaletrain {

template <class F>
void launch(Stream& stream, const char* label, int64_t n, const F& f) {
  if (n <= 0) return;
  if (stream.runs_inline()) {
    kernels::launch_host(label, n, f);
    return;
  }
  stream.enqueue([label, n, f] { kernels::launch_host(label, n, f); });
}

}  // namespace scaletrain
