// The start-up binding check: gathering masks to rank 0, and the warnings for overlapping masks on
// one host and for more compute threads than cores.
#include "scaletrain/train/binding_check.hpp"

#include <map>
#include <numeric>

namespace scaletrain::train {
namespace {

constexpr size_t kListed = 8;  // ranks named in one warning before "and N more"

struct WireBinding {
  CpuMask mask;
  int64_t threads;  // 64-bit: no padding bytes go over the wire
};

// Union-find root of i.
size_t root(const std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i];
  return i;
}

std::string rank_list(const std::vector<const RankBinding*>& group) {
  std::string out;
  for (size_t i = 0; i < group.size(); ++i) {
    if (i == kListed) return out + " and " + std::to_string(group.size() - kListed) + " more";
    if (i > 0) out += i + 1 == group.size() ? " and " : ", ";
    out += std::to_string(group[i]->rank);
  }
  return out;
}

std::string mask_list(const std::vector<const RankBinding*>& group) {
  std::string out;
  for (size_t i = 0; i < group.size() && i < kListed; ++i)
    out += (i > 0 ? ", rank " : "rank ") + std::to_string(group[i]->rank) + ": " + group[i]->mask.to_string();
  return group.size() > kListed ? out + ", ..." : out;
}

// Groups of two or more ranks on one host whose masks overlap (transitively), in rank order.
std::vector<std::vector<const RankBinding*>> sharing_groups(const std::vector<RankBinding>& ranks) {
  std::vector<size_t> parent(ranks.size());
  std::iota(parent.begin(), parent.end(), size_t{0});
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t j = i + 1; j < ranks.size(); ++j)
      if (ranks[i].host == ranks[j].host && ranks[i].mask.overlaps(ranks[j].mask))
        parent[root(parent, j)] = root(parent, i);
  std::map<size_t, std::vector<const RankBinding*>> by_root;
  for (size_t i = 0; i < ranks.size(); ++i) by_root[root(parent, i)].push_back(&ranks[i]);
  std::vector<std::vector<const RankBinding*>> groups;
  for (auto& [r, g] : by_root)
    if (g.size() > 1) groups.push_back(std::move(g));
  return groups;
}

}  // namespace

std::vector<RankBinding> gather_bindings(comm::Communicator& comm, const std::vector<std::string>& hosts,
                                         int threads) {
  const WireBinding mine{CpuMask::of_this_process(), threads};
  std::vector<WireBinding> all(static_cast<size_t>(comm.size()));
  comm.gather(&mine, sizeof mine, all.data(), 0);
  if (comm.rank() != 0) return {};
  std::vector<RankBinding> out;
  for (size_t r = 0; r < all.size(); ++r)
    out.push_back(RankBinding{static_cast<int>(r), hosts.at(r), all[r].mask, static_cast<int>(all[r].threads)});
  return out;
}

std::vector<std::string> binding_warnings(const std::vector<RankBinding>& ranks) {
  std::vector<std::string> out;
  for (const auto& g : sharing_groups(ranks))
    out.push_back("ranks " + rank_list(g) + " on host " + g.front()->host + " share cores (" + mask_list(g) +
                  "): they time-share them, and their throughput is not that of " + std::to_string(g.size()) +
                  " ranks with cores of their own");
  for (const RankBinding& r : ranks) {
    const int cores = r.mask.count();
    if (r.threads > cores)
      out.push_back("rank " + std::to_string(r.rank) + " on host " + r.host + " runs " + std::to_string(r.threads) +
                    " compute threads on " + std::to_string(cores) + (cores == 1 ? " core" : " cores") + " (mask " +
                    r.mask.to_string() + "): its threads time-share them");
  }
  return out;
}

}  // namespace scaletrain::train
