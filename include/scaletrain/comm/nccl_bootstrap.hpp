// The NCCL bootstrap as nccl-tests does it, as pure code over the host communicator (tested on the
// CPU with fake callables): rank 0 makes the opaque unique id, MPI_Bcast carries its bytes to every
// rank, then every rank initializes its rank of the NCCL communicator with them.
#pragma once
#include <array>
#include <cstddef>
#include <utility>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

// NCCL_UNIQUE_ID_BYTES (nccl.h); the NCCL communicator static_asserts that they agree.
inline constexpr size_t kNcclUniqueIdBytes = 128;
using NcclUniqueIdBytes = std::array<char, kNcclUniqueIdBytes>;

// get_id(NcclUniqueIdBytes& id) runs on rank 0 only (ncclGetUniqueId); then rank 0's bytes are
// broadcast over `host`; then every rank calls init(int world_size, const NcclUniqueIdBytes& id,
// int rank) (ncclCommInitRank) and its result is returned. Collective over `host`.
template <class GetId, class Init>
decltype(auto) bootstrap_nccl(Communicator& host, GetId&& get_id, Init&& init) {
  NcclUniqueIdBytes id{};
  if (host.rank() == 0) std::forward<GetId>(get_id)(id);
  host.broadcast(id.data(), static_cast<int64_t>(id.size()), 0);
  return std::forward<Init>(init)(host.size(), static_cast<const NcclUniqueIdBytes&>(id), host.rank());
}

}  // namespace scaletrain::comm
