// bench_core_link: how fast two cores of this machine reach each other's caches, measured now.
// A cache line bounced between a thread on the first CPU and a thread on another (round trip,
// ns), and a 1 MiB buffer written on the other CPU and read on the first (GB/s), against the
// first CPU reading the same buffer again from its own caches (the anchor). On a VM the host may
// place the virtual CPUs near each other or far apart, and move them while it runs: on the 2-core
// VMs of perf/HISTORY.md the round trip moved between about 55 and 330 ns, and a 0.9 MB MPI all-reduce
// between 2 ranks with it, 4-5x. bench_train_step.py runs it beside every training run.
// Prints a table, or one JSON object with --json.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "allowed_cpus.hpp"

namespace {

constexpr int kRoundTrips = 20000;
constexpr int kBursts = 5;
constexpr size_t kBufferFloats = (1 << 20) / sizeof(float);

void pin_to(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Median round trip (ns) of one cache line passed from `a` to `b` and back, over kBursts bursts.
double round_trip_ns(int a, int b) {
  alignas(64) std::atomic<int64_t> line{0};
  std::thread other([&] {
    pin_to(b);
    for (int64_t i = 0; i < int64_t{kRoundTrips} * kBursts; ++i) {
      while (line.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      line.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin_to(a);
  std::vector<double> bursts;
  for (int64_t burst = 0, i = 0; burst < kBursts; ++burst) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < kRoundTrips; ++r, ++i) {
      line.store(2 * i + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    bursts.push_back(seconds_since(t0) * 1e9 / kRoundTrips);
  }
  other.join();
  std::sort(bursts.begin(), bursts.end());
  return bursts[bursts.size() / 2];
}

float sum_of(const std::vector<float>& v) {
  float s[16] = {};
  for (size_t i = 0; i < v.size(); i += 16)
    for (int k = 0; k < 16; ++k) s[k] += v[i + static_cast<size_t>(k)];
  float total = 0;
  for (float x : s) total += x;
  return total;
}

struct Transfer {
  double cross_gb_s = 0, own_gb_s = 0;  // best of kBursts
};

// The buffer written on `b`, then read on `a` (cross), then read on `a` again (own caches).
Transfer transfer(int a, int b) {
  std::vector<float> buf(kBufferFloats);
  Transfer t;
  volatile float sink = 0;
  pin_to(a);
  for (int burst = 0; burst < kBursts; ++burst) {
    std::thread writer([&] {
      pin_to(b);
      std::fill(buf.begin(), buf.end(), static_cast<float>(burst));
    });
    writer.join();
    const double bytes = static_cast<double>(buf.size() * sizeof(float));
    auto t0 = std::chrono::steady_clock::now();
    sink = sink + sum_of(buf);
    t.cross_gb_s = std::max(t.cross_gb_s, bytes / seconds_since(t0) / 1e9);
    t0 = std::chrono::steady_clock::now();
    sink = sink + sum_of(buf);
    t.own_gb_s = std::max(t.own_gb_s, bytes / seconds_since(t0) / 1e9);
  }
  return t;
}

struct Link {
  int a, b;
  double round_trip_ns;
  Transfer transfer;
};

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
  const std::vector<int> cpus = scaletrain::bench::allowed_cpus();
  if (cpus.size() < 2) {
    std::fprintf(stderr, "bench_core_link: needs at least 2 CPUs, this process may run on %zu\n", cpus.size());
    return 1;
  }
  // The first CPU against each other one (up to 16): enough to see a far pair on a node.
  std::vector<Link> links;
  for (size_t k = 1; k < cpus.size() && k <= 16; ++k)
    links.push_back({cpus[0], cpus[k], round_trip_ns(cpus[0], cpus[k]), transfer(cpus[0], cpus[k])});
  const auto slowest = std::max_element(links.begin(), links.end(), [](const Link& x, const Link& y) {
    return x.round_trip_ns < y.round_trip_ns;
  });

  if (json) {
    std::printf("{\"max_round_trip_ns\": %.1f, \"links\": [", slowest->round_trip_ns);
    for (size_t i = 0; i < links.size(); ++i)
      std::printf("%s{\"cpus\": [%d, %d], \"round_trip_ns\": %.1f, \"cross_gb_s\": %.2f, \"own_gb_s\": %.2f}",
                  i ? ", " : "", links[i].a, links[i].b, links[i].round_trip_ns, links[i].transfer.cross_gb_s,
                  links[i].transfer.own_gb_s);
    std::printf("]}\n");
    return 0;
  }
  std::printf("%-8s %15s %20s %20s %10s\n", "cpus", "round trip ns", "1 MiB cross GB/s", "1 MiB own GB/s",
              "cross/own");
  for (const Link& l : links) {
    char pair[32];
    std::snprintf(pair, sizeof pair, "%d-%d", l.a, l.b);
    std::printf("%-8s %15.1f %20.2f %20.2f %10.2f\n", pair, l.round_trip_ns, l.transfer.cross_gb_s,
                l.transfer.own_gb_s, l.transfer.cross_gb_s / l.transfer.own_gb_s);
  }
  std::printf("round trip: one cache line from the first CPU to the other and back (median of %d bursts of %d)\n"
              "cross: 1 MiB written on the other CPU, read on the first; own: read again on the first (anchor)\n",
              kBursts, kRoundTrips);
  return 0;
}
