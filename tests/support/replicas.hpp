// Whether the model replicas of all ranks hold bitwise the same tensor (MPI tests of the trainer).
#pragma once
#include <cstring>
#include <vector>

#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::testing {

// Collective: rank 0's bytes of the host tensor w against every rank's.
inline bool identical_on_every_rank(comm::Communicator& comm, const Tensor& w) {
  std::vector<char> root(w.bytes());
  std::memcpy(root.data(), w.raw(), w.bytes());
  comm.broadcast(root.data(), static_cast<int64_t>(root.size()), 0);
  int32_t differs = std::memcmp(root.data(), w.raw(), w.bytes()) != 0 ? 1 : 0;
  comm.allreduce(&differs, 1, DType::i32, comm::ReduceOp::max);
  return differs == 0;
}

}  // namespace scaletrain::testing
