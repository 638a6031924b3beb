// What a normalization layer needs from the ranks to use statistics over the global batch
// (SyncBatchNorm), without nn/ knowing MPI or NCCL: a sum over the ranks of a few f64 values that
// live on the layer's device. The trainer implements it over its communicator.
#pragma once
#include "scaletrain/backend/stream.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::nn {

class BatchStatisticsReducer {
 public:
  virtual ~BatchStatisticsReducer() = default;
  // Replaces `values` (f64, memory of the layer's backend) by their sum over the ranks, after the
  // work already on `stream`; what is queued on it afterwards sees the sums. Every rank calls it
  // for the same tensors in the same order.
  virtual void sum(const Tensor& values, Stream& stream) = 0;
};

}  // namespace scaletrain::nn
