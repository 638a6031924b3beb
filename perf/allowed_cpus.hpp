// The CPUs this process may run on (its affinity mask), in order: the cores the machine probes
// (bench_peak_flops, bench_core_link) pin their threads to.
#pragma once
#include <sched.h>

#include <vector>

namespace scaletrain::bench {

inline std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  return cpus;
}

}  // namespace scaletrain::bench
