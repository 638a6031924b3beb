// The residual tail fusion (Model::fuse_residual_tails): BatchNorm -> Add -> ReLU runs as one pass
// forward and one backward. In f32 it computes what the three layers compute apart, bitwise, on cpu
// and sim (training, evaluation folded and unfolded, gradients); bf16 and f16 agree to their
// rounding; its gradients match finite differences with packed (C % 8 = 0) and unpacked channels;
// resnet20 and resnet50 fuse every block's tail, and a step makes fewer device calls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/device_tensors.hpp"
#include "support/layer_harness.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::backend_of;
using scaletrain::testing::normal_values;
using scaletrain::testing::tensors_close;
using scaletrain::testing::to_host;
using scaletrain::testing::values_on_device;

namespace {

int fused_tails(const nn::Model& m) {
  int n = 0;
  for (const auto& l : m.layers())
    if (const auto* bn = dynamic_cast<const nn::BatchNorm2d*>(l.get()); bn && bn->fused_residual()) ++n;
  return n;
}

struct TailRun {
  std::vector<float> train_logits, eval_logits, gradients;
  int fused = 0;
  int64_t step_calls = 0;
};

constexpr int64_t kBatch = 4;
const Shape kSample{12, 12, 3};

// resnet20 on `kind` in `dtype`: two training steps (forward and backward), then an evaluation
// forward (with BatchNorm folded where `fold`).
TailRun run_resnet20(DeviceKind kind, DType dtype, bool fuse, bool fold, const std::vector<float>& x) {
  auto backend = backend_of(kind);
  auto m = nn::make_zoo_model("resnet20", kSample, 10);
  m->set_residual_fusion(fuse);
  m->set_batch_norm_folding(fold);
  m->build(*backend, kBatch, dtype);
  m->init_parameters(5);
  const Tensor xd = values_on_device(*backend, nn::with_batch(kBatch, kSample), x, dtype);
  Tensor dlogits = backend->empty({kBatch, 10}, DType::f32, "dlogits");
  backend->upload(dlogits, normal_values(kBatch * 10, 0.0f, 0.1f, 3));
  TailRun r;
  for (int step = 0; step < 2; ++step) {
    backend->compute_stream().synchronize();
    const int64_t before = backend->counters().read().calls;
    r.train_logits = to_host(*backend, m->forward(xd, true));
    m->backward(dlogits);
    backend->compute_stream().synchronize();
    r.step_calls = backend->counters().read().calls - before;
  }
  r.gradients = to_host(*backend, m->flat_gradients());
  r.eval_logits = to_host(*backend, m->forward(xd, false));
  r.fused = fused_tails(*m);
  return r;
}

TEST(ResidualFusion, F32EqualsTheUnfusedLayersBitwiseOnCpuAndSim) {
  const std::vector<float> x = normal_values(kBatch * shape_numel(kSample), 0.2f, 1.0f, 11);
  for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::sim}) {
    for (bool fold : {true, false}) {
      SCOPED_TRACE(device_kind_name(kind) + (fold ? " folded" : " unfolded"));
      const TailRun fused = run_resnet20(kind, DType::f32, true, fold, x);
      const TailRun plain = run_resnet20(kind, DType::f32, false, fold, x);
      EXPECT_EQ(fused.fused, 9) << "resnet20's nine blocks";
      EXPECT_EQ(plain.fused, 0);
      EXPECT_EQ(fused.train_logits, plain.train_logits);
      EXPECT_EQ(fused.gradients, plain.gradients);
      EXPECT_EQ(fused.eval_logits, plain.eval_logits);
      EXPECT_LT(fused.step_calls, plain.step_calls);
      if (kind == DeviceKind::sim && fold)
        std::printf("resnet20 f32 on sim, calls per training step: %lld fused, %lld apart\n",
                    static_cast<long long>(fused.step_calls), static_cast<long long>(plain.step_calls));
    }
  }
}

TEST(ResidualFusion, CpuAndSimAgreeBitwise) {
  const std::vector<float> x = normal_values(kBatch * shape_numel(kSample), 0.2f, 1.0f, 12);
  for (DType dtype : {DType::f32, DType::bf16}) {
    const TailRun cpu = run_resnet20(DeviceKind::cpu, dtype, true, true, x);
    const TailRun sim = run_resnet20(DeviceKind::sim, dtype, true, true, x);
    EXPECT_EQ(cpu.train_logits, sim.train_logits) << dtype_name(dtype);
    EXPECT_EQ(cpu.gradients, sim.gradients) << dtype_name(dtype);
    EXPECT_EQ(cpu.eval_logits, sim.eval_logits) << dtype_name(dtype);
  }
}

double relative_distance(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// One rounding where the layers apart round three times: against f32, the fused 16-bit run is no
// further off than the unfused one (logits and gradients, within a margin for the noise of 16 bits).
TEST(ResidualFusion, Bf16AndF16AreNoFurtherFromF32ThanTheUnfusedLayers) {
  const std::vector<float> x = normal_values(kBatch * shape_numel(kSample), 0.2f, 1.0f, 13);
  const TailRun f32 = run_resnet20(DeviceKind::cpu, DType::f32, false, true, x);
  for (DType dtype : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const TailRun fused = run_resnet20(DeviceKind::cpu, dtype, true, true, x);
    const TailRun plain = run_resnet20(DeviceKind::cpu, dtype, false, true, x);
    EXPECT_EQ(fused.fused, 9);
    const double logits_fused = relative_distance(fused.train_logits, f32.train_logits);
    const double logits_plain = relative_distance(plain.train_logits, f32.train_logits);
    const double eval_fused = relative_distance(fused.eval_logits, f32.eval_logits);
    const double eval_plain = relative_distance(plain.eval_logits, f32.eval_logits);
    const double grad_fused = relative_distance(fused.gradients, f32.gradients);
    const double grad_plain = relative_distance(plain.gradients, f32.gradients);
    std::printf("%s against f32 (relative L2), fused / apart: logits %.4f / %.4f, evaluation %.4f / %.4f, "
                "gradients %.4f / %.4f\n",
                std::string(dtype_name(dtype)).c_str(), logits_fused, logits_plain, eval_fused, eval_plain, grad_fused, grad_plain);
    EXPECT_LT(logits_fused, 1.5 * logits_plain + 1e-3);
    EXPECT_LT(eval_fused, 1.5 * eval_plain + 1e-3);
    EXPECT_LT(grad_fused, 1.5 * grad_plain + 1e-3);
  }
}

// A residual block's tail alone: conv -> bn -> add(bn, conv) -> relu, L = sum(y * r); every
// parameter's gradient against central differences, with C = 8 (packs of channels) and C = 6.
TEST(ResidualFusion, GradientsMatchFiniteDifferences) {
  for (int64_t channels : {8, 6}) {
    SCOPED_TRACE(std::to_string(channels) + " channels");
    auto backend = make_cpu_backend();
    nn::Model m("tail", nn::ParameterNaming::node);
    const std::string c = m.node<nn::Conv2D>({nn::Model::input()}, "conv",
                                             nn::Conv2DOptions{channels, 1, 1, nn::Padding::same, 1, true});
    const std::string b = m.node<nn::BatchNorm2d>({c}, "bn");
    const std::string s = m.node<nn::Add>({b, c}, "add");
    m.node<nn::ActivationLayer>({s}, "relu", nn::Activation::relu);
    const Shape sample{3, 3, 2};
    m.configure(sample);
    m.build(*backend, 2, DType::f32);
    m.init_parameters(7);
    ASSERT_EQ(fused_tails(m), 1);
    const Tensor x =
        values_on_device(*backend, nn::with_batch(2, sample), normal_values(2 * 18, 0.0f, 1.0f, 4), DType::f32);
    const std::vector<float> r = normal_values(2 * 9 * channels, 0.0f, 1.0f, 5);
    Tensor rd = backend->empty({2 * 9 * channels}, DType::f32, "r");
    backend->upload(rd, r);
    const auto loss = [&] {
      const std::vector<float> y = to_host(*backend, m.forward(x, true));
      double l = 0;
      for (size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * r[i];
      return l;
    };
    loss();
    m.backward(rd);
    const std::vector<float> analytic = to_host(*backend, m.flat_gradients());
    float* p = m.flat_parameters().data<float>();
    const double eps = 1e-3;
    for (int64_t i = 0; i < m.parameter_count(); ++i) {
      const float saved = p[i];
      p[i] = saved + static_cast<float>(eps);
      m.refresh_compute_parameters();
      const double up = loss();
      p[i] = saved - static_cast<float>(eps);
      m.refresh_compute_parameters();
      const double down = loss();
      p[i] = saved;
      m.refresh_compute_parameters();
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[static_cast<size_t>(i)], numeric, 2e-2 * std::max(1.0, std::fabs(numeric))) << i;
    }
  }
}

TEST(ResidualFusion, Resnet50FusesEveryBottleneckTail) {
  auto backend = backend_of(DeviceKind::sim);
  auto m = nn::make_zoo_model("resnet50", {32, 32, 3}, 10);
  m->build(*backend, 1, DType::bf16);
  EXPECT_EQ(fused_tails(*m), 16);
}

}  // namespace
