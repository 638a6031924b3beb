// comm.backend: its names, its resolution for a device, the gradient communicator it selects, and
// the one-line description the start-up output and run.json show.
#include "scaletrain/comm/gradient_transport.hpp"

#include "scaletrain/comm/nccl_communicator.hpp"
#include "scaletrain/comm/sim_device_communicator.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/mpi_environment.hpp"

namespace scaletrain::comm {

CommBackend parse_comm_backend(const std::string& name) {
  if (name == "auto") return CommBackend::auto_;
  if (name == "nccl") return CommBackend::nccl;
  if (name == "mpi") return CommBackend::mpi;
  ST_FAIL("comm.backend = '", name, "' is not one of auto, nccl, mpi");
}

std::string comm_backend_name(CommBackend b) {
  switch (b) {
    case CommBackend::auto_: return "auto";
    case CommBackend::nccl: return "nccl";
    case CommBackend::mpi: return "mpi";
  }
  return "?";
}

CommBackend resolve_comm_backend(CommBackend requested, DeviceKind device) {
  if (requested == CommBackend::auto_) return device == DeviceKind::cuda ? CommBackend::nccl : CommBackend::mpi;
  ST_CHECK(requested != CommBackend::nccl || device != DeviceKind::cpu,
           "comm.backend = nccl needs a device (run.device = cuda, or sim for its simulation), but run.device = cpu: "
           "use comm.backend = mpi (or auto)");
  return requested;
}

namespace {
DeviceKind kind_of(Device d) {
  switch (d) {
    case Device::cpu: return DeviceKind::cpu;
    case Device::sim: return DeviceKind::sim;
    case Device::cuda: return DeviceKind::cuda;
  }
  return DeviceKind::cpu;
}
}  // namespace

std::unique_ptr<Communicator> make_gradient_communicator(Communicator& host, Backend& backend, CommBackend kind) {
  const DeviceKind device = kind_of(backend.device());
  if (resolve_comm_backend(kind, device) == CommBackend::mpi) return nullptr;
  if (device == DeviceKind::sim) return make_sim_device_communicator(host, backend);
  return make_nccl_communicator(host, backend);
}

std::string gradient_transport_description(CommBackend resolved, DeviceKind device) {
  if (resolved == CommBackend::nccl && device == DeviceKind::sim)
    return "nccl path simulated with MPI on the sim comm stream (stream-ordered buckets, averaged by the transport)";
  if (resolved == CommBackend::nccl) return "nccl (stream-ordered buckets on the cuda comm stream, ncclAvg)";
  const std::string alg = mpi_iallreduce_algorithm_setting();
  const std::string libnbc =
      alg.empty() ? "" : "; Open MPI libnbc iallreduce algorithm " + alg + (alg == "1" ? " (ring)" : "");
  if (device == DeviceKind::cpu) return "mpi (host buffers" + libnbc + ")";
  return "mpi (host-staged: buckets copied to pinned host buffers on the " + device_kind_name(device) +
         " comm stream" + libnbc + ")";
}

}  // namespace scaletrain::comm
