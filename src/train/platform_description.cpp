// describe_platform: every rank's node hardware, gathered and grouped by host
// (train/platform_description.hpp).
#include "scaletrain/train/platform_description.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace scaletrain::train {
namespace {

// One rank's view of its node.
struct RankHardware {
  std::string host, accelerator, device_id, cpu;
  int64_t cores = 0;
};

std::string rank_hardware_json(const std::string& host, const Backend& backend) {
  return nlohmann::json{{"host", host},
                        {"accelerator", backend.accelerator_name()},
                        {"device_id", backend.device_id()},
                        {"cpu", cpu_model_name()},
                        {"cores", static_cast<int64_t>(::sysconf(_SC_NPROCESSORS_ONLN))}}
      .dump();
}

RankHardware parse_rank_hardware(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  return RankHardware{j["host"], j["accelerator"], j["device_id"], j["cpu"], j["cores"]};
}

// A node's ranks: "4x NVIDIA H200" (GPUs counted by device id) or "AMD EPYC (2 cores)".
std::string describe_node(const std::vector<RankHardware>& ranks, int& accelerators) {
  std::set<std::string> devices;
  std::set<std::string> names;
  for (const RankHardware& r : ranks)
    if (!r.accelerator.empty()) {
      devices.insert(r.device_id);  // the PCI bus id: ranks sharing a GPU count it once
      names.insert(r.accelerator);
    }
  accelerators = static_cast<int>(devices.size());
  if (devices.empty()) return ranks.front().cpu + " (" + std::to_string(ranks.front().cores) + " cores)";
  std::string text = std::to_string(devices.size()) + "x ";
  for (auto it = names.begin(); it != names.end(); ++it) text += (it == names.begin() ? "" : "/") + *it;
  return text;
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  struct utsname u {};
  return std::string("unknown ") + (::uname(&u) == 0 ? u.machine : "") + " CPU";
}

PlatformDescription describe_platform(comm::Communicator& comm, const Backend& backend) {
  std::vector<std::string> order;  // hosts in the order of their first rank
  std::map<std::string, std::vector<RankHardware>> by_host;
  for (const std::string& text : comm::allgather_strings(comm, rank_hardware_json(comm.host(), backend))) {
    RankHardware r = parse_rank_hardware(text);
    if (by_host.find(r.host) == by_host.end()) order.push_back(r.host);
    by_host[r.host].push_back(std::move(r));
  }
  PlatformDescription p;
  p.nodes = static_cast<int>(order.size());
  std::vector<std::pair<std::string, int>> kinds;  // node description, how many nodes
  for (const std::string& host : order) {
    int accelerators = 0;
    const std::string node = describe_node(by_host[host], accelerators);
    p.accelerators_per_node = std::max(p.accelerators_per_node, accelerators);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == node; });
    if (it == kinds.end())
      kinds.emplace_back(node, 1);
    else
      ++it->second;
  }
  for (const auto& [node, count] : kinds) {
    if (!p.text.empty()) p.text += " + ";
    p.text += std::to_string(count) + (count == 1 ? " node of " : " nodes of ") + node;
  }
  return p;
}

}  // namespace scaletrain::train
