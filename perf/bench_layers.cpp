// bench_layers: where a training step of a zoo model spends its time, layer by layer, in fp32 and
// in bf16: forward + backward milliseconds per step, GFLOP/s (backward counted as 2x the forward
// FLOPs), and each precision's share of its measured peak (bench_peak_flops --json, run from the
// same directory: fp32 FMA chains and bf16 vdpbf16ps chains on `threads` cores).
// Chains and graphs (the ResNets) alike: each layer's forward as Model::forward runs it, its backward
// between Model::backward's per-layer callbacks (which include summing the gradients of outputs with
// several consumers). Ends with the step's time per layer type. Single process; --threads compute
// threads (default 1: one core, as one rank).
//   bench_layers --model fmnist_sepcnn --batch 64 --steps 10
//   bench_layers --model resnet50 --input 224,224,3 --classes 1000 --batch 8 --steps 3
//   bench_layers --model vit --vit 4,4,4,64,128 --batch 128   (model.vit.*: patch, layers, heads, hidden, MLP)
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
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
#include "scaletrain/train/config.hpp"

using namespace scaletrain;

namespace {

struct LayerTimes {
  std::vector<std::string> names, types;
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

struct Workload {
  std::string model;
  Shape input{28, 28, 1};
  int64_t classes = 10, batch = 64, steps = 10, warmup = 3;
  nn::VitOptions vit;  // the vit network's architecture (--vit)
};

// Adds each layer's forward and backward seconds of `steps` training steps (after `warmup` untimed
// ones) to `seconds`.
void time_steps(nn::Model& model, const Tensor& x, int64_t steps, int64_t warmup, std::vector<double>& seconds) {
  auto& layers = model.layers();
  const size_t n = layers.size();
  std::vector<const Tensor*> outs(n), in;
  // Any f32 gradient of the logits' shape, and of each auxiliary output's (inception_v3's).
  const auto gradient_of = [&](const Shape& sample) {
    Tensor g(nn::with_batch(model.batch(), sample));
    for (int64_t i = 0; i < g.numel(); ++i) g.data<float>()[i] = 0.01f * static_cast<float>(i % 7 - 3);
    return g;
  };
  const Tensor dlogits = gradient_of(model.output_shape());
  std::vector<Tensor> aux;
  std::vector<const Tensor*> aux_dlogits;
  for (const nn::AuxiliaryOutput& a : model.auxiliary_outputs())
    for (size_t i = 0; i < n; ++i)
      if (layers[i]->name() == a.node) aux.push_back(gradient_of(layers[i]->output_shape()));
  for (const Tensor& t : aux) aux_dlogits.push_back(&t);
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const bool timed = s >= warmup;
    for (size_t i = 0; i < n; ++i) {
      in.clear();
      for (int p : model.producers(i)) in.push_back(p == nn::kModelInput ? &x : outs[static_cast<size_t>(p)]);
      const double t0 = now_seconds();
      outs[i] = &layers[i]->forward_inputs(in, true);
      if (timed) seconds[i] += now_seconds() - t0;
    }
    double t0 = now_seconds();
    model.backward(
        dlogits,
        [&](size_t i) {
          const double t = now_seconds();
          if (timed) seconds[i] += t - t0;
          t0 = t;
        },
        aux_dlogits);
  }
}

LayerTimes time_layers(Backend& backend, const Workload& w, DType dtype) {
  nn::ZooOptions options;
  options.classes = w.classes;
  options.vit = w.vit;
  auto model = nn::make_zoo_model(w.model, w.input, options);
  model->build(backend, w.batch, dtype);
  model->init_parameters(1);
  Shape shape{w.batch};
  shape.insert(shape.end(), w.input.begin(), w.input.end());
  Tensor x32(shape);
  for (int64_t i = 0; i < x32.numel(); ++i) x32.data<float>()[i] = static_cast<float>((i * 37) % 255) / 255.0f - 0.5f;
  Tensor x(shape, dtype, "input");
  visit_float_type(dtype, [&](auto t) {
    using T = decltype(t);
    launch(backend.compute_stream(), "input", x.numel(), kernels::Cast<float, T>{x32.data<float>(), x.data<T>()});
  });
  auto& layers = model->layers();
  const size_t n = layers.size();
  LayerTimes r;
  r.seconds.assign(n, 0);
  time_steps(*model, x, w.steps, w.warmup, r.seconds);
  for (size_t i = 0; i < n; ++i) {
    r.seconds[i] /= static_cast<double>(w.steps);
    r.total += r.seconds[i];
    const auto* pool = dynamic_cast<const nn::Pool2D*>(layers[i].get());
    const bool absorbed = pool && pool->absorbed();
    r.names.push_back(layers[i]->name() + " (" + layers[i]->type() + ")");
    r.types.push_back(layers[i]->type());
    r.absorbed.push_back(absorbed);
    r.flops.push_back(static_cast<double>(model->training_flops_of_layer(i)) * static_cast<double>(w.batch));
    if (absorbed) r.flops[i - 1] += std::exchange(r.flops[i], 0.0);  // counted where it runs
  }
  return r;
}

// The step's seconds per layer type, {fp32, bf16}, and how many layers each type has.
void print_by_type(const LayerTimes& f, const LayerTimes& b) {
  std::map<std::string, std::pair<double, double>> seconds;
  std::map<std::string, int> count;
  for (size_t i = 0; i < f.types.size(); ++i) {
    seconds[f.types[i]].first += f.seconds[i];
    seconds[f.types[i]].second += b.seconds[i];
    ++count[f.types[i]];
  }
  std::printf("\n%-24s %6s %9s %8s %9s %8s\n", "by layer type", "layers", "fp32 ms", "share", "bf16 ms", "share");
  for (const auto& [type, t] : seconds)
    std::printf("%-24s %6d %9.3f %7.1f%% %9.3f %7.1f%%\n", type.c_str(), count[type], 1e3 * t.first,
                100 * t.first / f.total, 1e3 * t.second, 100 * t.second / b.total);
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
  Workload w;
  w.model = "fmnist_sepcnn";
  std::string input = "28,28,1";
  int threads = 1;
  app.add_option("--model", w.model)->capture_default_str();
  app.add_option("--input", input, "per-sample shape H,W,C")->capture_default_str();
  app.add_option("--classes", w.classes)->capture_default_str();
  app.add_option("--batch", w.batch)->capture_default_str();
  app.add_option("--steps", w.steps)->capture_default_str();
  app.add_option("--warmup", w.warmup)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  std::vector<int64_t> vit;
  app.add_option("--vit", vit, "vit: patch_size,num_layers,num_heads,hidden_dim,mlp_dim")->delimiter(',')->expected(5);
  CLI11_PARSE(app, argc, argv);
  if (!vit.empty()) w.vit = {0, vit[0], vit[1], vit[2], vit[3], vit[4]};
  w.input = train::parse_model_input(input);
  {
    kernels::KokkosScope kokkos;
    const auto [peak32_core, peak16_core] = peaks_per_core(argv[0]);
    const double peak32 = peak32_core * threads, peak16 = peak16_core * threads;
    auto backend = make_cpu_backend(threads);
    const LayerTimes f = time_layers(*backend, w, DType::f32);
    const LayerTimes b = time_layers(*backend, w, DType::bf16);
    std::printf("%s on %s, %lld classes, batch %lld, %d thread(s), %lld timed steps; %s\n", w.model.c_str(),
                shape_string(w.input).c_str(), static_cast<long long>(w.classes), static_cast<long long>(w.batch),
                threads, static_cast<long long>(w.steps), backend->description().c_str());
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
    print_by_type(f, b);
    std::printf("\nGF/s counts forward + backward as 3x the forward FLOPs (2x for the first layer with parameters,\n"
                "which computes no input gradient); %% peak is against the measured peak of\n"
                "the same precision (bench_peak_flops): fp32 FMA chains, bf16 vdpbf16ps chains.\n"
                "*: this pooling runs inside the layer before it (Model::build), in both precisions or the one\n"
                "named; there that layer's time and FLOPs include it.\n");
  }
  MPI_Finalize();
  return 0;
}
