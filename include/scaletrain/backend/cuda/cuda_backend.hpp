// What only a CUDA backend (make_cuda_backend) can tell or make: its caching allocator's counters, for
// tests and tools that show nothing is allocated from the device in the steady state, and the cuDNN
// bf16 batch normalization probe.
#pragma once
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/caching_allocator.hpp"

namespace scaletrain::cuda {

// Error when `backend` is not a CUDA backend.
AllocatorStats allocator_stats(Backend& backend);
// cuDNN's batch normalization forced to bf16 on the compute stream (the GPU kit's question whether it
// runs and agrees with the kernels); errors as cuDNN's calls raise them.
std::unique_ptr<BatchNormOp> cudnn_bf16_batch_norm_probe(Backend& backend, const BatchNormShape& shape);

}  // namespace scaletrain::cuda
