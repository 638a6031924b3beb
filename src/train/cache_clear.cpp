// clear_page_cache: one rank per host drops the data file from the page cache (train/cache_clear.hpp).
#include "scaletrain/train/cache_clear.hpp"

#include <algorithm>
#include <cstdio>

#include "scaletrain/core/error.hpp"
#include "scaletrain/data/page_cache.hpp"
#include "scaletrain/train/errors.hpp"

namespace scaletrain::train {
namespace {

bool leads_its_host(const std::vector<std::string>& hosts, int rank) {
  return std::find(hosts.begin(), hosts.end(), hosts[static_cast<size_t>(rank)]) - hosts.begin() == rank;
}

// The first non-empty message of any rank, the same on every rank ("" when there is none).
std::string first_problem(comm::Communicator& comm, const std::string& mine) {
  for (const std::string& p : comm::allgather_strings(comm, mine))
    if (!p.empty()) return p;
  return {};
}

double megabytes(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

}  // namespace

bool CacheClearReport::cleared() const { return cached_after * 100 <= file_bytes * nodes; }

CacheClearReport clear_page_cache(comm::Communicator& comm, const std::vector<std::string>& hosts,
                                  const std::string& path) {
  const bool leader = leads_its_host(hosts, comm.rank());
  data::PageCacheDrop mine;
  std::string problem;
  if (leader) {
    try {
      mine = data::drop_from_page_cache(path);
    } catch (const std::exception& e) {
      problem = "run.clear_cache on " + comm.host() + " (rank " + std::to_string(comm.rank()) + "): " + e.what();
    }
  }
  problem = first_problem(comm, problem);
  if (!problem.empty()) throw ConsistentError(problem);
  const int64_t figures[4] = {leader ? 1 : 0, mine.file_bytes, mine.cached_before, mine.cached_after};
  std::vector<int64_t> all(4 * static_cast<size_t>(comm.size()));
  comm.allgather(figures, sizeof figures, all.data());
  CacheClearReport r;
  r.path = path;
  for (size_t i = 0; i < all.size(); i += 4) {
    r.nodes += static_cast<int>(all[i]);
    r.file_bytes = std::max(r.file_bytes, all[i + 1]);
    r.cached_before += all[i + 2];
    r.cached_after += all[i + 3];
  }
  return r;
}

std::string cache_clear_line(const CacheClearReport& r) {
  char line[512];
  const char* nodes = r.nodes == 1 ? "node" : "nodes";
  if (r.cleared())
    std::snprintf(line, sizeof line,
                  "run.clear_cache: dropped %s (%.1f MB) from the page cache of %d %s: %.1f MB were cached, %.1f MB "
                  "are now",
                  r.path.c_str(), megabytes(r.file_bytes), r.nodes, nodes, megabytes(r.cached_before),
                  megabytes(r.cached_after));
  else
    std::snprintf(line, sizeof line,
                  "run.clear_cache: asked to drop %s (%.1f MB) from the page cache of %d %s, but the kernel kept "
                  "%.1f of the %.1f MB cached (tmpfs, for one, holds its files in memory): MLLOG cache_clear is false",
                  r.path.c_str(), megabytes(r.file_bytes), r.nodes, nodes, megabytes(r.cached_after),
                  megabytes(r.cached_before));
  return line;
}

nlohmann::json cache_clear_json(const CacheClearReport& r) {
  return {{"path", r.path},
          {"nodes", r.nodes},
          {"file_bytes", r.file_bytes},
          {"cached_before_bytes", r.cached_before},
          {"cached_after_bytes", r.cached_after},
          {"cleared", r.cleared()}};
}

}  // namespace scaletrain::train
