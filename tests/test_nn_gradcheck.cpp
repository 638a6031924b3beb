// Every layer's backward against central finite differences of L = sum(y * r) for a fixed random r,
// on input and parameter coordinates, and the loss gradient likewise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "scaletrain/nn/attention.hpp"
#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/layer_norm.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "support/layer_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::LayerHarness;

namespace {

void fill_normal(Tensor& t, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng) * scale;
}

struct Case {
  std::string name;
  std::function<nn::LayerPtr()> make;
  Shape in;
  int64_t batch = 2;
  double eps = 1e-2;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

double weighted_sum(const Tensor& y, const Tensor& r) {
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += static_cast<double>(y.data<float>()[i]) * r.data<float>()[i];
  return s;
}

// Checks up to `samples` coordinates of `target` (the input or a parameter) against finite differences.
void check_coordinates(const std::string& what, float* target, const float* analytic, int64_t n,
                       const std::function<double()>& loss, double eps, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> pick(0, n - 1);
  const int samples = static_cast<int>(std::min<int64_t>(n, 40));
  for (int s = 0; s < samples; ++s) {
    const int64_t i = n <= 40 ? s : pick(rng);
    const float saved = target[i];
    target[i] = saved + static_cast<float>(eps);
    const double up = loss();
    target[i] = saved - static_cast<float>(eps);
    const double down = loss();
    target[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(analytic[i], numeric, 2e-2 * std::max(1.0, std::fabs(numeric))) << what << "[" << i << "]";
  }
}

class GradCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradCheck, BackwardMatchesFiniteDifferences) {
  const Case& c = GetParam();
  std::mt19937 rng(42);
  LayerHarness h(c.make(), c.in, c.batch);
  const double step = 3;  // the cpu backend's device memory is the host's
  h.layer().set_random_state(7, &step, Tensor());
  Shape xs{c.batch};
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  Tensor x(xs);
  fill_normal(x, rng, 1.0f);
  for (auto& p : h.layer().parameters()) fill_normal(p.value, rng, 0.3f);

  const Tensor y0 = h.model.forward(x, true).clone();
  Tensor r(y0.shape());
  fill_normal(r, rng, 1.0f);
  auto loss = [&] { return weighted_sum(h.model.forward(x, true), r); };

  loss();
  const Tensor dx = h.layer().backward(r, true).clone();
  std::vector<Tensor> grads;
  for (auto& p : h.layer().parameters()) grads.push_back(p.grad.clone());

  check_coordinates(c.name + " dx", x.data<float>(), dx.data<float>(), x.numel(), loss, c.eps, rng);
  auto& ps = h.layer().parameters();
  for (size_t k = 0; k < ps.size(); ++k)
    check_coordinates(c.name + " d" + ps[k].name, ps[k].value.data<float>(), grads[k].data<float>(), ps[k].value.numel(),
                      loss, c.eps, rng);
}

nn::Conv2DOptions conv(int64_t f, int64_t k, int64_t s, nn::Padding p, nn::Activation a) {
  return nn::Conv2DOptions{f, k, s, p, 1, true, a};
}

INSTANTIATE_TEST_SUITE_P(
    Layers, GradCheck,
    ::testing::Values(
        Case{"dense_none", [] { return std::make_unique<nn::Dense>("", 5); }, {7}},
        Case{"dense_relu", [] { return std::make_unique<nn::Dense>("", 6, nn::Activation::relu); }, {9}, 3, 1e-3},
        Case{"dense_selu", [] { return std::make_unique<nn::Dense>("", 4, nn::Activation::selu); }, {5}, 3, 1e-3},
        Case{"conv_same", [] { return std::make_unique<nn::Conv2D>("", conv(4, 3, 1, nn::Padding::same, nn::Activation::none)); }, {5, 5, 3}},
        Case{"conv_stride2_selu", [] { return std::make_unique<nn::Conv2D>("", conv(3, 3, 2, nn::Padding::same, nn::Activation::selu)); }, {6, 6, 2}, 2, 1e-3},
        Case{"conv_valid_5x5", [] { return std::make_unique<nn::Conv2D>("", conv(2, 5, 1, nn::Padding::valid, nn::Activation::none)); }, {7, 6, 2}},
        Case{"depthwise", [] { return std::make_unique<nn::DepthwiseConv2D>("", 3, 1, nn::Padding::same, true, nn::Activation::none); }, {5, 5, 4}},
        Case{"separable_selu", [] { return std::make_unique<nn::SeparableConv2D>("", 5, 3, 1, nn::Padding::same, nn::Activation::selu); }, {5, 4, 3}, 2, 1e-3},
        Case{"maxpool", [] { return std::make_unique<nn::MaxPool2D>("", 2); }, {6, 6, 3}, 2, 1e-3},
        Case{"avgpool_same", [] { return std::make_unique<nn::AvgPool2D>("", 3, 2, nn::Padding::same); }, {5, 5, 2}},
        Case{"global_avg_pool", [] { return std::make_unique<nn::GlobalAvgPool>(""); }, {4, 3, 5}},
        Case{"flatten", [] { return std::make_unique<nn::Flatten>(""); }, {3, 2, 2}},
        Case{"relu", [] { return std::make_unique<nn::ActivationLayer>("", nn::Activation::relu); }, {4, 4, 2}, 2, 1e-3},
        Case{"selu", [] { return std::make_unique<nn::ActivationLayer>("", nn::Activation::selu); }, {4, 4, 2}, 2, 1e-3},
        Case{"dropout", [] { return std::make_unique<nn::Dropout>("", 0.3f); }, {20}},
        Case{"batch_norm", [] { return std::make_unique<nn::BatchNorm2d>(""); }, {3, 3, 4}, 2, 1e-3},
        Case{"batch_norm_relu", [] { return std::make_unique<nn::BatchNorm2d>("", nn::Activation::relu); }, {3, 2, 3}, 3, 1e-4},
        Case{"batch_norm_features", [] { return std::make_unique<nn::BatchNorm2d>(""); }, {5}, 4, 1e-3},
        // Token tensors [T, C]: Dense over the last dimension with the exact GELU, LayerNorm, and
        // self-attention with and without dropout on its probabilities (one mask: a fixed random state).
        Case{"dense_gelu_tokens", [] { return std::make_unique<nn::Dense>("", 6, nn::Activation::gelu); }, {3, 5}, 2, 1e-3},
        Case{"layer_norm", [] { return std::make_unique<nn::LayerNorm>(""); }, {3, 8}, 2, 1e-3},
        Case{"attention", [] { return std::make_unique<nn::MultiheadSelfAttention>("", 2); }, {4, 6}, 2, 1e-3},
        Case{"attention_dropout", [] { return std::make_unique<nn::MultiheadSelfAttention>("", 2, 0.3f); }, {4, 6}, 2,
             1e-3}),
    [](const auto& info) { return info.param.name; });

// Attention dropout in training only: evaluation gives the layer without dropout, training differs
// from it (a mask drops some of the 2 x 2 x 16 x 16 probabilities), and a new step a new mask.
TEST(AttentionDropout, DropsProbabilitiesInTrainingOnly) {
  std::mt19937 rng(5);
  LayerHarness with(std::make_unique<nn::MultiheadSelfAttention>("", 2, 0.5f), {16, 8}, 2);
  LayerHarness without(std::make_unique<nn::MultiheadSelfAttention>("", 2), {16, 8}, 2);
  for (size_t k = 0; k < with.layer().parameters().size(); ++k) {
    fill_normal(with.layer().parameters()[k].value, rng, 0.3f);
    std::copy_n(with.layer().parameters()[k].value.data<float>(), with.layer().parameters()[k].value.numel(),
                without.layer().parameters()[k].value.data<float>());
  }
  Tensor x({2, 16, 8});
  fill_normal(x, rng, 1.0f);
  auto differs = [](const Tensor& a, const Tensor& b) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.data<float>()[i] != b.data<float>()[i]) return true;
    return false;
  };
  double step = 1;  // read by the kernel at each launch (the cpu backend's device memory is the host's)
  with.layer().set_random_state(7, &step, Tensor());
  const Tensor plain = without.model.forward(x, false).clone();
  EXPECT_FALSE(differs(with.model.forward(x, false).clone(), plain));
  const Tensor step1 = with.model.forward(x, true).clone();
  EXPECT_TRUE(differs(step1, plain));
  step = 2;
  EXPECT_TRUE(differs(with.model.forward(x, true).clone(), step1));
}

TEST(GradCheckLoss, SoftmaxCrossEntropyMatchesFiniteDifferences) {
  std::mt19937 rng(3);
  const int64_t n = 4, k = 6;
  Tensor logits({n, k});
  fill_normal(logits, rng, 2.0f);
  Tensor labels({n}, DType::i32);
  for (int64_t i = 0; i < n; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>((i * 5) % k);
  const std::unique_ptr<Backend> backend = make_cpu_backend();
  nn::SoftmaxCrossEntropy loss;
  loss.build(*backend, n, k);
  auto mean_loss = [&] { return loss.forward_and_read(logits, labels).mean_loss(); };
  mean_loss();
  const Tensor d = loss.backward(1.0f / n).clone();
  check_coordinates("dlogits", logits.data<float>(), d.data<float>(), logits.numel(), mean_loss, 1e-2, rng);
}

}  // namespace
