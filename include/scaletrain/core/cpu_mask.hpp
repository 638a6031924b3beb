// CpuMask: the CPUs a process may run on (its affinity mask), written as taskset -c writes them
// ("0-3,8"). Fixed-size, so that ranks can gather their masks with one allgather.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace scaletrain {

class CpuMask {
 public:
  static constexpr int kMaxCpus = 1024;  // CPU_SETSIZE

  CpuMask() = default;
  // This process's mask (sched_getaffinity); Error when it cannot be read or is empty.
  static CpuMask of_this_process();

  void set(int cpu);
  bool has(int cpu) const;
  int count() const;
  bool overlaps(const CpuMask& other) const;
  bool operator==(const CpuMask& other) const = default;
  std::string to_string() const;  // "0-3,8"; "none" when empty

 private:
  std::array<uint64_t, kMaxCpus / 64> words_{};
};

}  // namespace scaletrain
