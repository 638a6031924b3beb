// bench_peak_flops: this machine's fp32 and bf16 peaks, measured: every thread (one per core it may run
// on) runs independent chains of AVX-512 (or AVX2) fused multiply-adds, of AVX512-BF16 dot products
// (vdpbf16ps), and of AMX bf16 tile products (tdpbf16ps), each where the CPU has them, from registers
// (the kernels: backend/cpu/instruction_rates.hpp).
// The figures the training benchmark divides by.
// Prints a table, or one JSON object with --json.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "allowed_cpus.hpp"
#include "scaletrain/backend/cpu/instruction_rates.hpp"

namespace {

constexpr int64_t kIters = 20'000'000;

// Runs `kernel` on `threads` threads, thread t pinned to cpus[t % cpus.size()]; FLOP/s over all.
template <typename Kernel>
double flops_per_s(const std::vector<int>& cpus, int threads, Kernel kernel, double flops_per_thread) {
  std::vector<std::thread> pool;
  std::vector<double> sink(static_cast<size_t>(threads));
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[static_cast<size_t>(t) % cpus.size()], &one);
      pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      sink[static_cast<size_t>(t)] = kernel();
    });
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return flops_per_thread * threads / s;
}

struct Peak {
  double one_core = 0, all_cores = 0;  // FLOP/s
};

// Best of 3 on one core and on all, after one untimed single-core run that warms up the clocks.
template <typename Kernel>
Peak measure(const std::vector<int>& cpus, Kernel kernel, double flops_per_thread) {
  Peak p;
  flops_per_s(cpus, 1, kernel, flops_per_thread);
  for (int r = 0; r < 3; ++r) {
    p.one_core = std::max(p.one_core, flops_per_s(cpus, 1, kernel, flops_per_thread));
    p.all_cores = std::max(p.all_cores, flops_per_s(cpus, static_cast<int>(cpus.size()), kernel, flops_per_thread));
  }
  return p;
}

// GFLOP/s as a JSON number, or null where the instructions are missing; and as a table cell.
std::string json_gflops(bool have, double flops) {
  char s[32] = "null";
  if (have) std::snprintf(s, sizeof s, "%.1f", flops / 1e9);
  return s;
}
std::string table_gflops(bool have, double flops) {
  char s[32];
  if (have) std::snprintf(s, sizeof s, "%16.1f", flops / 1e9);
  else std::snprintf(s, sizeof s, "%16s", "unavailable");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  const std::vector<int> cpus = scaletrain::bench::allowed_cpus();

  using namespace scaletrain::cpu;
  const bool avx512 = have_avx512f();
  const std::string isa = avx512 ? "avx512f" : "avx2+fma";
  const Peak fp32 = measure(
      cpus, [&] { return avx512 ? fma_chains_avx512(kIters) : fma_chains_avx2(kIters); },
      static_cast<double>(kIters) * (avx512 ? kFmaAvx512FlopsPerIter : kFmaAvx2FlopsPerIter));

  const bool bf16 = have_avx512_bf16();
  const std::string bf16_isa = bf16 ? "avx512bf16" : "none";
  // The same instruction count as the fp32 kernel (12 FMA chains, 16 dot-product chains per
  // round), so both take a similar time.
  const int64_t bf16_iters = kIters * 12 / 16;
  const Peak bf16_peak = bf16 ? measure(cpus, [&] { return dpbf16_chains_avx512(bf16_iters); },
                                        static_cast<double>(bf16_iters) * kDpbf16FlopsPerIter)
                              : Peak{};
  // AMX: 1/64 of the FMA rounds, as each round is four tile products of 16384 FLOPs.
  const bool amx = have_amx_bf16();
  const int64_t amx_iters = kIters / 64;
  const Peak amx_peak =
      amx ? measure(cpus, [&] { return amx_bf16_chains(amx_iters); }, static_cast<double>(amx_iters) * kAmxBf16FlopsPerIter)
          : Peak{};

  if (json) {
    std::printf(
        "{\"isa\": \"%s\", \"cores\": %zu, \"peak_gflops_1core\": %.1f, \"peak_gflops\": %.1f, "
        "\"bf16_isa\": \"%s\", \"bf16_peak_gflops_1core\": %s, \"bf16_peak_gflops\": %s, "
        "\"amx_bf16_peak_gflops_1core\": %s, \"amx_bf16_peak_gflops\": %s}\n",
        isa.c_str(), cpus.size(), fp32.one_core / 1e9, fp32.all_cores / 1e9, bf16_isa.c_str(),
        json_gflops(bf16, bf16_peak.one_core).c_str(), json_gflops(bf16, bf16_peak.all_cores).c_str(),
        json_gflops(amx, amx_peak.one_core).c_str(), json_gflops(amx, amx_peak.all_cores).c_str());
    return 0;
  }
  std::printf("%-10s %6s %16s %16s %16s\n", "isa", "cores", "fp32 GFLOP/s", "bf16 GFLOP/s", "bf16 GFLOP/s");
  std::printf("%-10s %6s %16s %16s %16s\n", "", "", "(FMA)", "(vdpbf16ps)", "(AMX tdpbf16ps)");
  std::printf("%-10s %6d %16.1f %s %s\n", isa.c_str(), 1, fp32.one_core / 1e9,
              table_gflops(bf16, bf16_peak.one_core).c_str(), table_gflops(amx, amx_peak.one_core).c_str());
  std::printf("%-10s %6zu %16.1f %s %s\n", isa.c_str(), cpus.size(), fp32.all_cores / 1e9,
              table_gflops(bf16, bf16_peak.all_cores).c_str(), table_gflops(amx, amx_peak.all_cores).c_str());
  if (bf16)
    std::printf("bf16: vdpbf16ps chains (AVX512-BF16), 64 FLOPs per instruction (16 lanes x 2 pairs x 2)\n");
  else
    std::printf("bf16: unavailable, this CPU (or OS) lacks AVX512-BF16 (avx512_bf16 in /proc/cpuinfo)\n");
  if (amx)
    std::printf("amx:  tdpbf16ps chains on 4 accumulator tiles, 16384 FLOPs per instruction (16x16x32 x 2)\n");
  else
    std::printf("amx:  unavailable, this CPU (or OS) lacks AMX-BF16 (amx_bf16, amx_tile in /proc/cpuinfo)\n");
  return 0;
}
