// What a normalization layer needs from the ranks to use statistics over the global batch
// (SyncBatchNorm), without nn/ knowing MPI or NCCL: a sum over the ranks of a few f64 values that
// live on the layer's device. The trainer implements it over its communicator.
#pragma once
#include <cstdint>

namespace scaletrain {
class Stream;
}

namespace scaletrain::nn {

class BatchStatisticsReducer {
 public:
  virtual ~BatchStatisticsReducer() = default;
  // Replaces values[0, count) (device memory of the layer's backend) by their sum over the ranks.
  // Queued after the work already on `stream`; what is queued after it sees the sums.
  virtual void sum(double* values, int64_t count, Stream& stream) = 0;
};

}  // namespace scaletrain::nn
