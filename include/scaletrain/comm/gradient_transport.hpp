// The gradient transport a run asks for (comm.backend) and the communicator that carries it. auto is
// NCCL on run.device = cuda and MPI elsewhere; NCCL on the simulated device is the NCCL path's
// orchestration with MPI on the sim communication stream (sim_device_communicator.hpp); NCCL on cpu
// is a configuration error. MPI with device memory stages buckets through pinned host buffers.
#pragma once
#include <memory>
#include <string>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

enum class CommBackend { auto_, nccl, mpi };
CommBackend parse_comm_backend(const std::string& name);  // "auto" | "nccl" | "mpi"; Error otherwise
std::string comm_backend_name(CommBackend b);

// auto resolved for `device` (nccl on cuda, mpi elsewhere); nccl on cpu throws Error saying why.
CommBackend resolve_comm_backend(CommBackend requested, DeviceKind device);

// nccl: the device communicator (NCCL on cuda, its simulation on sim); mpi: nullptr, the host
// communicator carries the gradients. auto is resolved for the backend's device first. Collective
// over `host`; `host` and `backend` must outlive the result.
std::unique_ptr<Communicator> make_gradient_communicator(Communicator& host, Backend& backend, CommBackend kind);

// What carries a run's gradients, for the start-up output and run.json:
// "nccl (stream-ordered on the cuda comm stream, ncclAvg)".
std::string gradient_transport_description(CommBackend resolved, DeviceKind device);

}  // namespace scaletrain::comm
