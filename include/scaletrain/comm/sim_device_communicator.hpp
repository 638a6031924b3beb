// The simulated device's device communicator: the NCCL path's orchestration, run here. Collectives
// are queued on the sim backend's communication stream (a worker thread) and run there as MPI calls
// on a private duplicate of the host communicator, so the host thread never waits for them. ReduceOp::avg is the
// sum divided by the world size as the MPI path's DivideBy divides (x / world in float: f32 means are
// bitwise the MPI path's); bf16 and f16 are averaged as ncclAvg does for them (each contribution
// multiplied by the reciprocal rounded to the type, then summed), so their range behaves as NCCL's.
#pragma once
#include <memory>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

// Collective over `host`, which must be an MPI communicator (make_mpi_communicator): its ranks are
// duplicated. Needs run.device = sim and MPI_THREAD_MULTIPLE (the stream's thread calls MPI while
// the host thread does); throws Error saying so otherwise.
std::unique_ptr<Communicator> make_sim_device_communicator(Communicator& host, Backend& backend);

}  // namespace scaletrain::comm
