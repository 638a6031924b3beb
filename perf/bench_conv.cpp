// bench_conv: scaletrain's own convolution loops against oneDNN 2.6's convolution primitive (the anchor,
// same run), f32: the few-taps op (conv_few_taps.cpp) and the narrow-rows op (conv_narrow_rows.cpp) on
// first layers of the zoo and beside them, oneDNN's op with the direct backward-data
// (conv_direct_backward_data.cpp) on lenet's second layer and beside it, the direct depthwise kernels (depthwise_direct.cpp) on
// fmnist_sepcnn's depthwise shapes, each per pass (forward, backward-data, backward-weights); then the
// fused separable convolution against the composed ops the cpu backend would otherwise run. Best-of-N
// milliseconds per call with the two alternating, GFLOP/s of the faster, and the largest difference
// between the two results relative to the largest value.
//   bench_conv --batch 64 --reps 10 --threads 1
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/cpu/direct_ops.hpp"

using namespace scaletrain;
using bench::best_of;
using bench::random_values;

namespace {

struct ConvCase {
  const char* model;
  int64_t h, w, in_c, out_c, k, pad;
  bool depthwise = false;  // groups = in_c = out_c: the direct depthwise op
  bool narrow = false;     // the narrow-rows op (else the few-taps op)
  bool direct_bwd_data = false;  // oneDNN's op with the direct backward-data (conv_direct_backward_data.cpp)
};

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, double(std::abs(a[i] - b[i])));
    scale = std::max(scale, double(std::abs(a[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

void bench_case(Backend& onednn, const ConvCase& cc, int64_t batch, int reps) {
  ConvShape s;
  s.batch = batch;
  s.in_h = cc.h;
  s.in_w = cc.w;
  s.in_c = cc.in_c;
  s.out_c = cc.out_c;
  s.kernel_h = s.kernel_w = cc.k;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = cc.pad;
  s.groups = cc.depthwise ? cc.in_c : 1;
  s.bias = !cc.depthwise;  // as in SeparableConv2D
  auto anchor = onednn.make_conv(s);
  auto gemm = cc.depthwise         ? cpu::make_direct_depthwise_conv(s)
              : cc.narrow          ? cpu::make_narrow_rows_conv(s)
              : cc.direct_bwd_data ? cpu::make_direct_backward_data_conv(onednn.make_conv(s), s)
                                   : cpu::make_few_taps_conv(s);
  const size_t nx = batch * s.in_h * s.in_w * s.in_c, ny = batch * s.out_h() * s.out_w() * s.out_c;
  const size_t nw = s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w;
  const auto x = random_values<float>(nx, 1), w = random_values<float>(nw, 2), b = random_values<float>(s.out_c, 3);
  const auto dy = random_values<float>(ny, 4);
  std::vector<float> y_a(ny), y_g(ny), dx_a(nx), dx_g(nx), dw_a(nw), dw_g(nw), db_a(s.out_c), db_g(s.out_c);
  const auto [fwd_a, fwd_g] = best_of(
      reps, [&] { anchor->forward(x.data(), w.data(), b.data(), y_a.data()); },
      [&] { gemm->forward(x.data(), w.data(), b.data(), y_g.data()); });
  const auto [bwd_a, bwd_g] = best_of(
      reps, [&] { anchor->backward_data(dy.data(), w.data(), dx_a.data()); },
      [&] { gemm->backward_data(dy.data(), w.data(), dx_g.data()); });
  const auto [bww_a, bww_g] = best_of(
      reps, [&] { anchor->backward_weights(x.data(), dy.data(), dw_a.data(), db_a.data()); },
      [&] { gemm->backward_weights(x.data(), dy.data(), dw_g.data(), db_g.data()); });
  if (!s.bias) db_a = db_g;  // no bias: nothing to compare
  const double flops = 2.0 * double(ny) * double(s.in_c / s.groups * s.kernel_h * s.kernel_w);
  const std::string shape = std::to_string(batch) + "x" + std::to_string(cc.h) + "x" + std::to_string(cc.w) + "x" +
                            std::to_string(cc.in_c) + " k" + std::to_string(cc.k) + (cc.depthwise ? " dw" : " ->" + std::to_string(cc.out_c));
  auto row = [&](const char* pass, double ta, double tg, double diff) {
    std::printf("%-14s %-22s %-9s %10.3f %10.3f %8.2fx %8.1f %10.1e\n", cc.model, shape.c_str(), pass, 1e3 * ta,
                1e3 * tg, ta / tg, flops / std::min(ta, tg) / 1e9, diff);
  };
  row("forward", fwd_a, fwd_g, max_relative_difference(y_a, y_g));
  row("bwd_data", bwd_a, bwd_g, max_relative_difference(dx_a, dx_g));
  row("bwd_wts", bww_a, bww_g, std::max(max_relative_difference(dw_a, dw_g), max_relative_difference(db_a, db_g)));
}

// The fused separable convolution against the composed ops the cpu backend would otherwise run
// (oneDNN depthwise, sgemm pointwise, then SELU as fmnist_sepcnn has it), forward and backward (with
// dx) per call.
void bench_separable(Backend& cpu, int64_t batch, int64_t hw, int64_t c, int reps) {
  SeparableConvShape s;
  s.depthwise.batch = s.pointwise.batch = batch;
  s.depthwise.in_h = s.depthwise.in_w = s.pointwise.in_h = s.pointwise.in_w = hw;
  s.depthwise.in_c = s.depthwise.out_c = s.depthwise.groups = s.pointwise.in_c = s.pointwise.out_c = c;
  s.depthwise.kernel_h = s.depthwise.kernel_w = 3;
  s.depthwise.pad_top = s.depthwise.pad_left = s.depthwise.pad_bottom = s.depthwise.pad_right = 1;
  s.depthwise.bias = false;
  s.pointwise.kernel_h = s.pointwise.kernel_w = 1;
  s.activation = Activation::selu;
  auto composed =
      compose_separable_conv(s, cpu.make_conv(s.depthwise), cpu.make_activated_conv(s.pointwise, s.activation));
  auto fused = cpu::make_fused_separable_conv(s);
  const size_t n = batch * hw * hw * c;
  const auto x = random_values<float>(n, 1), w_dw = random_values<float>(9 * c, 2);
  const auto w_pw = random_values<float>(c * c, 3), b = random_values<float>(c, 4), dy = random_values<float>(n, 5);
  std::vector<float> mid_a(n), mid_f(n), pre_a(n), pre_f(n), y_a(n), y_f(n), dpre(n), dmid(n), dx_a(n), dx_f(n);
  std::vector<float> gdw_a(9 * c), gdw_f(9 * c);
  std::vector<float> gpw_a(c * c), gpw_f(c * c), db_a(c), db_f(c);
  const auto [fwd_a, fwd_f] = best_of(
      reps,
      [&] { composed->forward(x.data(), w_dw.data(), w_pw.data(), b.data(), mid_a.data(), pre_a.data(), y_a.data()); },
      [&] { fused->forward(x.data(), w_dw.data(), w_pw.data(), b.data(), mid_f.data(), pre_f.data(), y_f.data()); });
  const auto [bwd_a, bwd_f] = best_of(
      reps,
      [&] {
        composed->backward(x.data(), mid_a.data(), pre_a.data(), y_a.data(), dy.data(), w_dw.data(), w_pw.data(), dpre.data(),
                           dmid.data(), gdw_a.data(), gpw_a.data(), db_a.data(), dx_a.data());
      },
      [&] {
        fused->backward(x.data(), mid_f.data(), pre_f.data(), y_f.data(), dy.data(), w_dw.data(), w_pw.data(), dpre.data(),
                        dmid.data(), gdw_f.data(), gpw_f.data(), db_f.data(), dx_f.data());
      });
  const std::string shape = std::to_string(batch) + "x" + std::to_string(hw) + "x" + std::to_string(hw) + "x" +
                            std::to_string(c) + " sep";
  const double flops = 2.0 * double(n) * (9 + c);
  auto row = [&](const char* pass, double ta, double tf, double mult, double diff) {
    std::printf("%-14s %-22s %-9s %10.3f %10.3f %8.2fx %8.1f %10.1e\n", "fmnist_sepcnn", shape.c_str(), pass,
                1e3 * ta, 1e3 * tf, ta / tf, mult * flops / std::min(ta, tf) / 1e9, diff);
  };
  row("forward", fwd_a, fwd_f, 1, max_relative_difference(y_a, y_f));
  row("backward", bwd_a, bwd_f, 2,
      std::max({max_relative_difference(dx_a, dx_f), max_relative_difference(gdw_a, gdw_f),
                max_relative_difference(gpw_a, gpw_f)}));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"scaletrain's convolution loops against oneDNN's convolution, f32, per call"};
  bench::OpBenchOptions o;
  o.add_to(app);
  CLI11_PARSE(app, argc, argv);
  setlinebuf(stdout);
  const int64_t batch = o.batch;
  const int reps = o.reps;
  auto onednn = make_cpu_backend(o.threads, /*onednn_only=*/true);
  std::printf("convolution NHWC, f32, stride 1 (dw: depthwise, no bias); anchor: %s; best of %d calls each, alternating\n\n",
              onednn->description().c_str(), reps);
  std::printf("%-14s %-22s %-9s %10s %10s %9s %8s %10s\n", "model", "input, kernel, out_c", "pass", "oneDNN ms",
              "direct ms", "speedup", "GFLOP/s", "rel diff");
  const ConvCase cases[] = {{"fmnist_sepcnn", 28, 28, 1, 128, 3, 1}, {"lenet", 28, 28, 1, 6, 5, 2},
                            {"lenet (rows)", 28, 28, 1, 6, 5, 2, false, true},
                            {"1 -> 16 (rows)", 28, 28, 1, 16, 3, 1, false, true},
                            {"cifar-like", 32, 32, 3, 64, 3, 1},     {"2 channels", 28, 28, 2, 32, 3, 1},
                            {"lenet (bwd_d)", 14, 14, 6, 16, 5, 0, false, false, true},
                            {"4 -> 32 (bwd_d)", 28, 28, 4, 32, 3, 1, false, false, true},
                            {"16 -> 32 (bwd_d)", 14, 14, 16, 32, 3, 1, false, false, true},
                            {"16 -> 64 (bwd_d)", 14, 14, 16, 64, 3, 1, false, false, true},
                            {"cifar (bwd_d)", 32, 32, 3, 64, 3, 1, false, false, true},
                            {"2 ch (bwd_d)", 28, 28, 2, 32, 3, 1, false, false, true},
                            {"fmnist_sepcnn", 28, 28, 128, 128, 3, 1, true},
                            {"fmnist_sepcnn", 14, 14, 256, 256, 3, 1, true},
                            {"fmnist_sepcnn", 7, 7, 512, 512, 3, 1, true}};
  for (const ConvCase& cc : cases) bench_case(*onednn, cc, batch, reps);
  std::printf("\nseparable (3x3 depthwise + pointwise C -> C): composed = oneDNN depthwise + sgemm pointwise, the cpu\n"
              "backend's ops without fusion, in the 'oneDNN ms' column; fused in the 'direct ms' column\n");
  auto cpu = make_cpu_backend(o.threads);
  for (const auto& [hw, c] : {std::pair<int64_t, int64_t>{28, 128}, {14, 256}, {7, 512}})
    bench_separable(*cpu, batch, hw, c, reps);
  std::printf("\nspeedup = oneDNN ms / direct ms; GFLOP/s of the faster op (2 x outputs x IC x KH x KW per pass);\n"
              "rel diff = max |oneDNN - direct| / max |oneDNN| over y, dx, or dw and db.\n");
  return 0;
}
