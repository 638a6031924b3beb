// The NCCL communicator (src/comm/nccl, cuda build only): Communicator on device buffers, bootstrapped
// through the host communicator as nccl-tests does (nccl_bootstrap.hpp), its collectives queued on the
// CUDA backend's communication stream. ncclCommGetAsyncError is polled (a thread, every 100 ms, and
// every host wait); an asynchronous error prints one line naming the rank, runs ncclCommAbort, then
// the host communicator's abort (MPI_Abort). This header includes neither NCCL nor CUDA.
#pragma once
#include <memory>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

// Collective over `host`. `backend` must be the CUDA backend whose device this rank uses; both must
// outlive the communicator. Throws Error in a build without CUDA.
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& backend);

}  // namespace scaletrain::comm
