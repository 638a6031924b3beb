// Device start-up across ranks: backend options from the host communicator, the shared-device
// check on every rank's host and device id, and the broadcast of a device tensor through the host.
#include "scaletrain/train/device_setup.hpp"

#include <string>
#include <vector>

#include "scaletrain/backend/device_selection.hpp"
#include "scaletrain/train/errors.hpp"

namespace scaletrain::train {

BackendOptions rank_backend_options(const RunConfig& cfg, const comm::Communicator& comm) {
  BackendOptions o = backend_options(cfg);
  o.local_rank = comm.local_rank();
  o.local_size = comm.local_size();
  return o;
}

void check_devices_not_shared(comm::Communicator& comm, const Backend& backend) {
  const std::vector<std::string> hosts = comm::allgather_strings(comm, comm.host());
  const std::vector<std::string> ids = comm::allgather_strings(comm, backend.device_id());
  const std::vector<std::string> shared = shared_devices(hosts, ids);
  if (shared.empty()) return;
  std::string msg = "two ranks would share a device:";
  for (const std::string& line : shared) msg += "\n  " + line;
  msg += "\nstart one rank per device (for example srun --gpus-per-task=1, or mpirun -np <devices per node> per node)";
  throw ConsistentError(msg);
}

void broadcast_tensor(comm::Communicator& comm, Backend& backend, const Tensor& t, int root) {
  backend.synchronize();  // the work that put the values there has completed
  const auto bytes = static_cast<int64_t>(t.bytes());
  if (t.on_host()) {
    comm.broadcast(t.device_raw(), bytes, root);
    return;
  }
  Tensor host = backend.download(t);
  comm.broadcast(host.raw(), bytes, root);
  backend.copy_async(backend.compute_stream(), t, host);
  backend.compute_stream().synchronize();  // the host copy goes out of scope
}

}  // namespace scaletrain::train
