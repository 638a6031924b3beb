// Device selection rules and the shared-device check (backend/device_selection.hpp).
#include "scaletrain/backend/device_selection.hpp"

#include <map>
#include <utility>

#include "scaletrain/core/error.hpp"

namespace scaletrain {

int select_device(int local_rank, int local_size, int visible, const std::string& visible_env) {
  ST_CHECK(local_size >= 1 && local_rank >= 0 && local_rank < local_size, "select_device: local rank ", local_rank,
           " of ", local_size);
  const std::string env = visible_env.empty() ? "CUDA_VISIBLE_DEVICES is not set"
                                              : "CUDA_VISIBLE_DEVICES=" + visible_env;
  ST_CHECK(visible >= 1, "local rank ", local_rank, " sees no CUDA device (", env,
           "): run on a GPU node, or use run.device = cpu");
  if (visible == 1) return 0;
  if (visible >= local_size) return local_rank;
  ST_FAIL(local_size, " ranks run on this host but each sees only ", visible, " CUDA devices (", env,
          "), so ranks would share a device: start at most ", visible,
          " ranks per host (one per GPU), or give each rank its own device (srun --gpus-per-task=1)");
}

std::vector<std::string> shared_devices(const std::vector<std::string>& hosts,
                                        const std::vector<std::string>& device_ids) {
  ST_CHECK(hosts.size() == device_ids.size(), "shared_devices: ", hosts.size(), " hosts for ", device_ids.size(),
           " device ids");
  std::map<std::pair<std::string, std::string>, size_t> first_rank;
  std::vector<std::string> out;
  for (size_t r = 0; r < hosts.size(); ++r) {
    if (device_ids[r].empty()) continue;
    auto [it, inserted] = first_rank.emplace(std::make_pair(hosts[r], device_ids[r]), r);
    if (!inserted)
      out.push_back("ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " on host " + hosts[r] +
                    " share device " + device_ids[r]);
  }
  return out;
}

}  // namespace scaletrain
