// bench_peak_flops: this machine's fp32 peak, measured: every thread (one per core it may run on)
// runs independent chains of AVX-512 (or AVX2, or scalar) fused multiply-adds from registers.
// The figure the training benchmark divides by. Prints a table, or one JSON object with --json.
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kIters = 20'000'000;

// 12 independent accumulators hide the FMA latency (4 cycles) on 2 FMA ports.
__attribute__((target("avx512f"))) double fma_avx512(int64_t iters) {
  __m512 a[12];
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_ps(1.0f + static_cast<float>(k));
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = _mm512_fmadd_ps(a[k], m, c);
  float out[16];
  __m512 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) double fma_avx2(int64_t iters) {
  __m256 a[12];
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int k = 0; k < 12; ++k) a[k] = _mm256_set1_ps(1.0f + static_cast<float>(k));
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = _mm256_fmadd_ps(a[k], m, c);
  float out[8];
  __m256 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, a[k]);
  _mm256_storeu_ps(out, s);
  return out[0];
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int width = avx512 ? 16 : 8;
  const std::string isa = avx512 ? "avx512f" : "avx2+fma";

  auto run = [&](int threads) {
    std::vector<std::thread> pool;
    std::vector<double> sink(static_cast<size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[static_cast<size_t>(t) % cpus.size()], &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        sink[static_cast<size_t>(t)] = avx512 ? fma_avx512(kIters) : fma_avx2(kIters);
      });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<double>(kIters) * 12 * width * 2 * threads / s;
  };
  run(1);  // warm up the clocks
  double best1 = 0, bestn = 0;
  for (int r = 0; r < 3; ++r) {
    best1 = std::max(best1, run(1));
    bestn = std::max(bestn, run(static_cast<int>(cpus.size())));
  }
  if (json) {
    std::printf("{\"isa\": \"%s\", \"cores\": %zu, \"peak_gflops_1core\": %.1f, \"peak_gflops\": %.1f}\n", isa.c_str(),
                cpus.size(), best1 / 1e9, bestn / 1e9);
  } else {
    std::printf("%-10s %6s %16s\n", "isa", "cores", "fp32 GFLOP/s");
    std::printf("%-10s %6d %16.1f\n", isa.c_str(), 1, best1 / 1e9);
    std::printf("%-10s %6zu %16.1f\n", isa.c_str(), cpus.size(), bestn / 1e9);
  }
  return 0;
}
