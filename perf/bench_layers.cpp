// bench_layers: where a training step of a zoo model spends its time, layer by layer, in fp32 and
// in bf16: forward + backward milliseconds per step, GFLOP/s (backward counted as 2x the forward
// FLOPs), and each precision's share of its measured peak (bench_peak_flops --json, run from the
// same directory: fp32 FMA chains and bf16 vdpbf16ps chains on `threads` cores).
// Single process; --threads compute threads (default 1: one core, as one rank).
//   bench_layers --model fmnist_sepcnn --batch 64 --steps 10
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/zoo.hpp"

using namespace scaletrain;

namespace {

struct LayerTimes {
  std::vector<std::string> names;
  std::vector<double> flops;    // forward + backward FLOPs per step (Model::training_flops_of_layer)
  std::vector<double> seconds;  // forward + backward per step
  std::vector<bool> absorbed;   // a pooling that runs inside the layer before it
  double total = 0;
};

// The layer's name and type, marked where a pooling runs inside the layer before it in either precision.
std::string layer_label(const LayerTimes& f32, const LayerTimes& bf16, size_t i) {
  const bool a = f32.absorbed[i], b = bf16.absorbed[i];
  return f32.names[i] + (a && b ? " *" : a ? " * fp32" : b ? " * bf16" : "");
}

LayerTimes time_layers(Backend& backend, const std::string& model_name, int64_t batch, int64_t steps, int64_t warmup,
                       DType dtype) {
  auto model = nn::make_zoo_model(model_name, Shape{28, 28, 1}, 10);
  ST_CHECK(model->is_chain(), "bench_layers times the layers of chains; ", model_name, " is a graph");
  model->build(backend, batch, dtype);
  model->init_parameters(1);
  Tensor x32({batch, 28, 28, 1});
  for (int64_t i = 0; i < x32.numel(); ++i) x32.data<float>()[i] = static_cast<float>((i * 37) % 255) / 255.0f - 0.5f;
  Tensor x({batch, 28, 28, 1}, dtype, "input");
  visit_float_type(dtype, [&](auto t) {
    using T = decltype(t);
    launch(backend.compute_stream(), "input", x.numel(), kernels::Cast<float, T>{x32.data<float>(), x.data<T>()});
  });
  auto& layers = model->layers();
  const size_t n = layers.size();
  LayerTimes r;
  r.seconds.assign(n, 0);
  std::vector<const Tensor*> outs(n);
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const Tensor* cur = &x;
    for (size_t i = 0; i < n; ++i) {
      const double t0 = now_seconds();
      cur = &layers[i]->forward(*cur, true);
      if (s >= warmup) r.seconds[i] += now_seconds() - t0;
      outs[i] = cur;
    }
    Tensor dy = outs[n - 1]->clone();  // any gradient of the right shape and type
    const Tensor* g = &dy;
    // As Model::backward on a chain: no dx for the first layer with parameters, no backward before it.
    for (size_t k = n; k-- > 0;) {
      if (!model->runs_backward(k)) continue;
      const double t0 = now_seconds();
      g = &layers[k]->backward(*g, model->needs_input_gradient(k, 0));
      if (s >= warmup) r.seconds[k] += now_seconds() - t0;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    r.seconds[i] /= static_cast<double>(steps);
    r.total += r.seconds[i];
    const auto* pool = dynamic_cast<const nn::Pool2D*>(layers[i].get());
    const bool absorbed = pool && pool->absorbed();
    r.names.push_back(layers[i]->name() + " (" + layers[i]->type() + ")");
    r.absorbed.push_back(absorbed);
    r.flops.push_back(static_cast<double>(model->training_flops_of_layer(i)) * static_cast<double>(batch));
    if (absorbed) r.flops[i - 1] += std::exchange(r.flops[i], 0.0);  // counted where it runs
  }
  return r;
}

// GFLOP/s peaks per core, {fp32, bf16}, from bench_peak_flops next to this binary (0: not measured).
std::pair<double, double> peaks_per_core(const char* argv0) {
  const std::string exe = (std::filesystem::path(argv0).parent_path() / "bench_peak_flops").string();
  FILE* p = popen((exe + " --json 2>/dev/null").c_str(), "r");
  if (!p) return {0, 0};
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  try {
    const auto j = nlohmann::json::parse(out);
    const double bf = j.value("bf16_peak_gflops_1core", nlohmann::json()).is_number() ? j["bf16_peak_gflops_1core"].get<double>() : 0.0;
    return {j.value("peak_gflops_1core", 0.0), bf};
  } catch (...) {
    return {0, 0};
  }
}

std::string share(double gflops, double peak) {
  if (peak <= 0) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * gflops / peak);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"Per-layer fp32 and bf16 forward+backward time of a zoo model's training step"};
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
    const auto [peak32_core, peak16_core] = peaks_per_core(argv[0]);
    const double peak32 = peak32_core * threads, peak16 = peak16_core * threads;
    auto backend = make_cpu_backend(threads);
    const LayerTimes f = time_layers(*backend, model_name, batch, steps, warmup, DType::f32);
    const LayerTimes b = time_layers(*backend, model_name, batch, steps, warmup, DType::bf16);
    std::printf("%s, batch %lld, %d thread(s), %lld timed steps; %s\n", model_name.c_str(),
                static_cast<long long>(batch), threads, static_cast<long long>(steps), backend->description().c_str());
    std::printf("bf16: %s\n", backend->precision_support(DType::bf16).note.c_str());
    std::printf("measured peak on %d core(s): fp32 %.0f GFLOP/s, bf16 %.0f GFLOP/s\n", threads, peak32, peak16);
    std::printf("layers per step: fp32 %.1f ms, bf16 %.1f ms (bf16 %.2fx faster)\n\n", 1e3 * f.total, 1e3 * b.total,
                f.total / b.total);
    std::printf("%-40s %9s %9s %9s %8s %9s %9s %8s\n", "layer (fwd+bwd)", "fp32 ms", "GF/s", "% peak", "bf16 ms",
                "GF/s", "% bf16pk", "speedup");
    for (size_t i = 0; i < f.names.size(); ++i) {
      const double g32 = f.seconds[i] > 0 ? f.flops[i] / f.seconds[i] / 1e9 : 0;
      const double g16 = b.seconds[i] > 0 ? b.flops[i] / b.seconds[i] / 1e9 : 0;
      std::printf("%-40s %9.3f %9.1f %9s %8.3f %9.1f %9s %7.2fx\n", layer_label(f, b, i).c_str(), 1e3 * f.seconds[i],
                  g32, share(g32, peak32).c_str(), 1e3 * b.seconds[i], g16, share(g16, peak16).c_str(),
                  b.seconds[i] > 0 ? f.seconds[i] / b.seconds[i] : 0.0);
    }
    std::printf("\nGF/s counts forward + backward as 3x the forward FLOPs (2x for the first layer with parameters,\n"
                "which computes no input gradient); %% peak is against the measured peak of\n"
                "the same precision (bench_peak_flops): fp32 FMA chains, bf16 vdpbf16ps chains.\n"
                "*: this pooling runs inside the layer before it (Model::build), in both precisions or the one\n"
                "named; there that layer's time and FLOPs include it.\n");
  }
  MPI_Finalize();
  return 0;
}
