// The start-up check of how ranks are bound to cores. Ranks on one host whose affinity masks
// overlap time-share those cores, and a rank running more compute threads than its mask has cores
// oversubscribes them: either makes throughput figures meaningless (an unbound run under Slurm
// without task/affinity can be many times slower than a bound one), and neither fails. Rank 0
// gathers every rank's host, mask and thread count and warns, naming the ranks and their masks.
#pragma once
#include <string>
#include <vector>

#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/core/cpu_mask.hpp"

namespace scaletrain::train {

struct RankBinding {
  int rank = 0;
  std::string host;
  CpuMask mask;
  int threads = 1;  // compute threads the rank runs
};

// Every rank's binding, on rank 0 (other ranks get an empty vector); `hosts` is every rank's host,
// as the ranks have gathered them already. Collective.
std::vector<RankBinding> gather_bindings(comm::Communicator& comm, const std::vector<std::string>& hosts,
                                         int threads);

// One warning per group of ranks sharing cores on a host, and one per rank whose threads exceed
// its cores; empty when every rank has cores of its own.
std::vector<std::string> binding_warnings(const std::vector<RankBinding>& ranks);

// How to bind, printed once after the warnings.
inline constexpr const char* kBindingAdvice =
    "bind each rank to cores of its own: srun --cpu-bind=cores (with TaskPlugin=task/affinity or task/cgroup), "
    "mpirun --bind-to core; and leave run.threads at 0 (the cores the rank is bound to)";

}  // namespace scaletrain::train
