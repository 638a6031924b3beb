// Broadcast and checksum of the model's buffers, and SyncBatchNorm's sums over a host communicator.
#include "scaletrain/train/model_buffers.hpp"

#include <mpi.h>

#include <cstring>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/train/checkpoint.hpp"

namespace scaletrain::train {

void broadcast_model_buffers(Backend& backend, nn::Model& model, comm::Communicator& comm) {
  for (DType type : {DType::f32, DType::i64}) {
    Tensor& flat = model.flat_buffers(type);
    if (!flat.defined() || comm.size() == 1) continue;
    Tensor host = backend.download(flat);
    comm.broadcast(host.raw(), static_cast<int64_t>(host.bytes()), 0);
    backend.copy_async(backend.compute_stream(), flat, host);
    backend.compute_stream().synchronize();
  }
}

uint64_t model_buffers_checksum(Backend& backend, const nn::Model& model) {
  uint64_t h = 0;
  for (DType type : {DType::f32, DType::i64}) {
    const Tensor& flat = model.flat_buffers(type);
    if (!flat.defined()) continue;
    const Tensor host = backend.download(flat);
    // The bytes as floats: the hash reads words, not values.
    h = h * 1099511628211ull ^ parameter_checksum(static_cast<const float*>(host.raw()),
                                                   static_cast<int64_t>(host.bytes() / sizeof(float)));
  }
  return h;
}

CommunicatorStatisticsReducer::CommunicatorStatisticsReducer(Backend& backend, comm::Communicator& comm)
    : backend_(backend), comm_(&comm) {
  if (MPI_Comm mpi = comm::mpi_comm_of(comm); mpi != MPI_COMM_NULL) {
    own_ = comm::make_mpi_communicator(mpi);
    comm_ = own_.get();
  }
}

CommunicatorStatisticsReducer::~CommunicatorStatisticsReducer() = default;

void CommunicatorStatisticsReducer::sum(const Tensor& values, Stream& stream) {
  if (values.on_host() && stream.runs_inline()) {
    Tensor in_place = values;
    comm_->allreduce(in_place.raw(), in_place.numel(), DType::f64, comm::ReduceOp::sum);
    return;
  }
  Tensor host = backend_.pinned(values.shape(), DType::f64, "sync_bn.sums");
  backend_.copy_async(stream, host, values);
  stream.synchronize();
  comm_->allreduce(host.raw(), host.numel(), DType::f64, comm::ReduceOp::sum);
  backend_.copy_async(stream, values, host);
  stream.synchronize();
}

int use_statistics_reducer(nn::Model& model, nn::BatchStatisticsReducer* reducer) {
  int n = 0;
  for (nn::LayerPtr& layer : model.layers())
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(layer.get())) {
      bn->use_statistics_reducer(reducer);
      ++n;
    }
  return n;
}

}  // namespace scaletrain::train
