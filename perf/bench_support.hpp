// What the op benchmarks (bench_pool, bench_conv) share: their options, an op and its anchor timed
// alternately, best of N calls, and reproducible random operands in any storage type.
#pragma once
#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::bench {

// The op benchmarks' command line: batch, timed calls per pass, compute threads.
struct OpBenchOptions {
  int64_t batch = 64;
  int reps = 10;
  int threads = 1;
  void add_to(CLI::App& app) {
    app.add_option("--batch", batch)->capture_default_str();
    app.add_option("--reps", reps, "timed calls per op and pass (best is reported)")->capture_default_str();
    app.add_option("--threads", threads)->capture_default_str();
  }
};

// Best of reps: each rep times one call of a, then one of b (so both see the same machine load).
inline std::pair<double, double> best_of(int reps, const std::function<void()>& a, const std::function<void()>& b) {
  double ta = 1e30, tb = 1e30;
  a();  // warm-up: first touch of the outputs and workspaces
  b();
  for (int r = 0; r < reps; ++r) {
    double t0 = now_seconds();
    a();
    ta = std::min(ta, now_seconds() - t0);
    t0 = now_seconds();
    b();
    tb = std::min(tb, now_seconds() - t0);
  }
  return {ta, tb};
}

template <class T>
std::vector<T> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<T> v(n);
  for (auto& x : v) x = from_float<T>(dist(gen));
  return v;
}

}  // namespace scaletrain::bench
