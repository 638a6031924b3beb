// bench_layers: where a training step of a zoo model spends its time, layer by layer: forward and
// backward milliseconds per step, GFLOP/s (backward counted as 2x the forward FLOPs), and the share
// of the step. Single process; --threads compute threads (default 1: one core, as one rank).
//   bench_layers --model fmnist_sepcnn --batch 64 --steps 10
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/nn/zoo.hpp"

using namespace scaletrain;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"Per-layer forward/backward time of a zoo model's training step"};
  std::string model_name = "fmnist_sepcnn";
  int64_t batch = 64, steps = 10, warmup = 3;
  int threads = 1;
  app.add_option("--model", model_name)->capture_default_str();
  app.add_option("--batch", batch)->capture_default_str();
  app.add_option("--steps", steps)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  {
    kernels::KokkosScope kokkos;
    auto backend = make_cpu_backend(threads);
    auto model = nn::make_zoo_model(model_name, Shape{28, 28, 1}, 10);
    model->build(*backend, batch);
    model->init_parameters(1);
    Tensor x({batch, 28, 28, 1});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 255) / 255.0f - 0.5f;
    auto& layers = model->layers();
    const size_t n = layers.size();
    std::vector<double> fwd(n, 0), bwd(n, 0);
    std::vector<const Tensor*> outs(n);
    for (int64_t s = 0; s < warmup + steps; ++s) {
      const Tensor* cur = &x;
      for (size_t i = 0; i < n; ++i) {
        const double t0 = now_seconds();
        cur = &layers[i]->forward(*cur, true);
        if (s >= warmup) fwd[i] += now_seconds() - t0;
        outs[i] = cur;
      }
      Tensor dy = outs[n - 1]->clone();  // any gradient of the right shape
      const Tensor* g = &dy;
      for (size_t k = n; k-- > 0;) {
        const double t0 = now_seconds();
        g = &layers[k]->backward(*g, k > 0);
        if (s >= warmup) bwd[k] += now_seconds() - t0;
      }
    }
    double total = 0;
    for (size_t i = 0; i < n; ++i) total += fwd[i] + bwd[i];
    std::printf("%s, batch %lld, %d thread(s), %lld timed steps: %.1f ms per step in layers\n\n", model_name.c_str(),
                static_cast<long long>(batch), threads, static_cast<long long>(steps), 1e3 * total / steps);
    std::printf("%-34s %10s %10s %10s %10s %7s\n", "layer", "fwd ms", "bwd ms", "fwd GF/s", "bwd GF/s", "share");
    for (size_t i = 0; i < n; ++i) {
      const double f = fwd[i] / steps, b = bwd[i] / steps;
      const double flops = static_cast<double>(layers[i]->flops_per_sample()) * static_cast<double>(batch);
      const std::string name = layers[i]->name() + " (" + layers[i]->type() + ")";
      std::printf("%-34s %10.2f %10.2f %10.1f %10.1f %6.1f%%\n", name.c_str(), 1e3 * f, 1e3 * b,
                  f > 0 ? flops / f / 1e9 : 0.0, b > 0 ? 2 * flops / b / 1e9 : 0.0, 100 * (fwd[i] + bwd[i]) / total);
    }
  }
  MPI_Finalize();
  return 0;
}
