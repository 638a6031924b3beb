// Which GPU a rank takes, as pure rules (tested on the CPU; the CUDA backend applies them):
// a rank that sees all of its host's devices takes the one at its local rank; a rank that sees
// exactly one (Slurm --gpus-per-task=1 sets CUDA_VISIBLE_DEVICES per task) takes device 0; fewer
// visible devices than ranks on the host is an error. After selection, the ranks compare their
// devices' PCI bus ids per host: two ranks on one device are an error naming both.
#pragma once
#include <string>
#include <vector>

namespace scaletrain {

// The device index (among the visible ones) for local rank `local_rank` of `local_size` ranks on
// this host, which sees `visible` devices. Throws Error saying what to change; `visible_env` (the
// value of CUDA_VISIBLE_DEVICES, or empty when unset) goes into the message.
int select_device(int local_rank, int local_size, int visible, const std::string& visible_env = {});

// One line per pair of ranks on one host whose device ids are equal ("ranks 0 and 1 on host n1
// share device 0000:1b:00.0"); empty ids (devices that are not owned, cpu and sim) never clash.
// hosts and device_ids are indexed by rank.
std::vector<std::string> shared_devices(const std::vector<std::string>& hosts, const std::vector<std::string>& device_ids);

}  // namespace scaletrain
