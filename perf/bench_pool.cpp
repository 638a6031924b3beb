// bench_pool: the direct max pooling (max_pool_direct.cpp) against oneDNN's pooling primitive (the anchor,
// same run) on the max poolings of fmnist_sepcnn and lenet, f32 and bf16, forward (training and
// inference) and backward separately: best-of-N milliseconds per call, the two ops alternating.
//   bench_pool --batch 64 --reps 15 --threads 1
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/core/timer.hpp"
#include "bench_support.hpp"

using namespace scaletrain;
using bench::best_of;
using bench::random_values;

namespace {

struct PoolCase {
  const char* model;
  int64_t h, w, c;
};

template <class T>
size_t count_bit_differences(const std::vector<T>& a, const std::vector<T>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return n;
}

template <class T>
void bench_case(Backend& onednn, const PoolCase& pc, int64_t batch, DType dtype, int reps) {
  PoolShape s;
  s.batch = batch;
  s.in_h = pc.h;
  s.in_w = pc.w;
  s.channels = pc.c;
  s.dtype = dtype;
  auto anchor = onednn.make_pool(s);
  auto direct = cpu::make_direct_max_pool(s);
  const size_t nx = batch * s.in_h * s.in_w * s.channels, ny = batch * s.out_h() * s.out_w() * s.channels;
  const std::vector<T> x = random_values<T>(nx, 1), dy = random_values<T>(ny, 2);
  std::vector<T> y_a(ny), y_d(ny), dx_a(nx), dx_d(nx);
  const auto [fwd_a, fwd_d] = best_of(
      reps, [&] { anchor->forward(x.data(), y_a.data(), true); }, [&] { direct->forward(x.data(), y_d.data(), true); });
  const auto [bwd_a, bwd_d] = best_of(
      reps, [&] { anchor->backward(dy.data(), dx_a.data()); }, [&] { direct->backward(dy.data(), dx_d.data()); });
  const size_t y_diff = count_bit_differences(y_a, y_d), dx_diff = count_bit_differences(dx_a, dx_d);
  const auto [inf_a, inf_d] = best_of(
      reps, [&] { anchor->forward(x.data(), y_a.data(), false); }, [&] { direct->forward(x.data(), y_d.data(), false); });
  const std::string shape = std::to_string(batch) + "x" + std::to_string(pc.h) + "x" + std::to_string(pc.w) + "x" +
                            std::to_string(pc.c);
  const std::string type(dtype_name(dtype));
  auto row = [&](const char* pass, double ta, double td, const std::string& check) {
    std::printf("%-14s %-17s %-5s %-10s %10.3f %10.3f %8.2fx  %s\n", pc.model, shape.c_str(), type.c_str(), pass, 1e3 * ta,
                1e3 * td, ta / td, check.c_str());
  };
  row("fwd_train", fwd_a, fwd_d, std::to_string(y_diff) + " y");
  row("fwd_infer", inf_a, inf_d, "");
  row("backward", bwd_a, bwd_d, std::to_string(dx_diff) + " dx");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Direct max pooling against oneDNN's pooling, 2x2 stride 2, per call"};
  bench::OpBenchOptions o;
  o.reps = 15;
  o.add_to(app);
  CLI11_PARSE(app, argc, argv);
  setlinebuf(stdout);
  const int64_t batch = o.batch;
  const int reps = o.reps;
  auto onednn = make_cpu_backend(o.threads, /*onednn_only=*/true);
  std::printf("max pooling 2x2 stride 2, NHWC; anchor: %s; best of %d calls each, alternating\n",
              onednn->description().c_str(), reps);
  std::printf("bf16: %s\n\n", onednn->precision_support(DType::bf16).note.c_str());
  std::printf("%-14s %-17s %-5s %-10s %10s %10s %9s  %s\n", "model", "input NHWC", "type", "pass", "oneDNN ms",
              "direct ms", "speedup", "bits differing");
  const PoolCase cases[] = {{"fmnist_sepcnn", 28, 28, 128},
                            {"fmnist_sepcnn", 14, 14, 256},
                            {"fmnist_sepcnn", 7, 7, 512},
                            {"lenet", 28, 28, 6},
                            {"lenet", 10, 10, 16}};
  for (const PoolCase& pc : cases) {
    bench_case<float>(*onednn, pc, batch, DType::f32, reps);
    bench_case<bf16>(*onednn, pc, batch, DType::bf16, reps);
  }
  std::printf("\nspeedup = oneDNN ms / direct ms. bits differing: elements of y (forward) and dx (backward) whose\n"
              "bits differ between the two ops (0 expected; ties in bf16 may route dx to another cell).\n");
  return 0;
}
