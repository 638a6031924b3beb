// The model's buffers across ranks. Plain BatchNorm keeps each rank's running statistics in
// training (as DDP does); before every evaluation and checkpoint rank 0's are broadcast (DDP's
// broadcast_buffers), and the checkpoint's replica check covers them. SyncBatchNorm sums its batch
// statistics over the ranks through CommunicatorStatisticsReducer.
#pragma once
#include <cstdint>
#include <memory>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/nn/batch_statistics.hpp"
#include "scaletrain/nn/model.hpp"

namespace scaletrain::train {

// Copies rank 0's buffers (f32 and i64) to every rank through `comm` (host memory). Collective;
// nothing to do for a model without buffers.
void broadcast_model_buffers(Backend& backend, nn::Model& model, comm::Communicator& comm);

// A hash of the buffers' bytes (0 for a model without buffers), for the replica check.
uint64_t model_buffers_checksum(Backend& backend, const nn::Model& model);

// Sums over the ranks on a host communicator of its own (a duplicate of MPI's, so that its
// collectives never interleave with the gradient all-reduces' on another thread). Device values
// travel through host memory: the stream is synchronized around the sum.
class CommunicatorStatisticsReducer : public nn::BatchStatisticsReducer {
 public:
  CommunicatorStatisticsReducer(Backend& backend, comm::Communicator& comm);
  ~CommunicatorStatisticsReducer() override;
  void sum(const Tensor& values, Stream& stream) override;

 private:
  Backend& backend_;
  std::unique_ptr<comm::Communicator> own_;  // the duplicate, where `comm` is MPI's
  comm::Communicator* comm_;
};

// Sets `reducer` on every BatchNorm2d of the model (SyncBatchNorm; null: per-rank statistics).
// Returns how many there are.
int use_statistics_reducer(nn::Model& model, nn::BatchStatisticsReducer* reducer);

}  // namespace scaletrain::train
