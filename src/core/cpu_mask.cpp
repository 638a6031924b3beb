// CpuMask: reading this process's affinity mask, and comparing and printing masks.
#include "scaletrain/core/cpu_mask.hpp"

#include <sched.h>

#include <bit>

#include "scaletrain/core/error.hpp"

namespace scaletrain {

CpuMask CpuMask::of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  ST_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity failed: cannot read the CPUs this process ",
           "is bound to");
  CpuMask m;
  for (int cpu = 0; cpu < kMaxCpus; ++cpu)
    if (CPU_ISSET(cpu, &set)) m.set(cpu);
  ST_CHECK(m.count() > 0, "the affinity mask of this process is empty");
  return m;
}

void CpuMask::set(int cpu) {
  ST_CHECK(cpu >= 0 && cpu < kMaxCpus, "CPU ", cpu, " is outside 0..", kMaxCpus - 1);
  words_[static_cast<size_t>(cpu / 64)] |= uint64_t{1} << (cpu % 64);
}

bool CpuMask::has(int cpu) const {
  return cpu >= 0 && cpu < kMaxCpus && (words_[static_cast<size_t>(cpu / 64)] >> (cpu % 64) & 1) != 0;
}

int CpuMask::count() const {
  int n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

bool CpuMask::overlaps(const CpuMask& other) const {
  for (size_t i = 0; i < words_.size(); ++i)
    if ((words_[i] & other.words_[i]) != 0) return true;
  return false;
}

std::string CpuMask::to_string() const {
  std::string out;
  for (int cpu = 0; cpu < kMaxCpus; ++cpu) {
    if (!has(cpu)) continue;
    int last = cpu;
    while (has(last + 1)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (last > cpu) {
      out += '-';
      out += std::to_string(last);
    }
    cpu = last;
  }
  return out.empty() ? "none" : out;
}

}  // namespace scaletrain
