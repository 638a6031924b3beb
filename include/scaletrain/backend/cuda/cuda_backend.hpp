// What only a CUDA backend (make_cuda_backend) can tell: its caching allocator's counters, for tests
// and tools that show nothing is allocated from the device in the steady state.
#pragma once
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/caching_allocator.hpp"

namespace scaletrain::cuda {

// Error when `backend` is not a CUDA backend.
AllocatorStats allocator_stats(Backend& backend);

}  // namespace scaletrain::cuda
