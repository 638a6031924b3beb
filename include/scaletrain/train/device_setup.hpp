// A rank's device at start-up: the backend options with the rank's place on its host (device
// selection), the check that no two ranks of a host share a device, and rank 0's copy of a device
// tensor everywhere (through host memory when the host cannot read the device's).
#pragma once
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/train/config.hpp"

namespace scaletrain::train {

// backend_options(cfg), with local_rank and local_size from the host communicator.
BackendOptions rank_backend_options(const RunConfig& cfg, const comm::Communicator& comm);

// Collective: gathers every rank's host and backend.device_id(); throws ConsistentError (the same on
// every rank) listing each pair of ranks that share a device.
void check_devices_not_shared(comm::Communicator& comm, const Backend& backend);

// Collective: `t` (on the backend's device) gets rank `root`'s values on every rank, once the work
// queued before has completed. Device memory the host cannot read goes through a host copy.
void broadcast_tensor(comm::Communicator& comm, Backend& backend, const Tensor& t, int root);

}  // namespace scaletrain::train
