// BatchNorm2d's behaviour as PyTorch's nn.BatchNorm2d (momentum 0.1, eps 1e-5): training normalizes
// with the batch's statistics and moves the running ones (unbiased variance), evaluation uses the
// running ones; the fused ReLU equals a ReLU layer after it; statistics stay exact on data with a
// large offset; bf16 and f16 stay near f32; cpu and the simulated device agree bitwise. Folded into
// the convolution before it for evaluation, it gives the unfolded model's logits up to rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
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
using scaletrain::testing::on_device;
using scaletrain::testing::tensors_close;
using scaletrain::testing::to_host;
using scaletrain::testing::values_on_device;

namespace {

constexpr int64_t kBatch = 3;
const Shape kSample{4, 5, 6};  // [H, W, C]: 60 rows per batch of 3, 6 channels

// One BatchNorm2d in a model of its own on a backend, with weight 1 + 0.1 c and bias 0.05 c.
struct BatchNormRun {
  std::unique_ptr<Backend> backend;
  nn::Model model{"bn", nn::ParameterNaming::node};

  BatchNormRun(DeviceKind kind, DType dtype, nn::Activation act = nn::Activation::none, const Shape& sample = kSample)
      : backend(backend_of(kind)) {
    model.node<nn::BatchNorm2d>({nn::Model::input()}, "bn", act);
    model.configure(sample);
    model.build(*backend, kBatch, dtype);
    model.init_parameters(1);
    const int64_t c = sample.back();
    std::vector<float> params(static_cast<size_t>(model.parameter_count()));
    for (const nn::ParameterSlot& s : model.slots())
      for (int64_t i = 0; i < c; ++i)
        params[static_cast<size_t>(s.offset + i)] = s.name == "bn.weight" ? 1.0f + 0.1f * i : 0.05f * i;
    Tensor host({model.parameter_count()}, DType::f32, "params");
    std::copy(params.begin(), params.end(), host.data<float>());
    backend->copy_async(backend->compute_stream(), model.flat_parameters(), host);
    model.refresh_compute_parameters();
  }
  Shape batch_shape() const { return nn::with_batch(kBatch, model.input_shape()); }
  std::vector<float> forward(const std::vector<float>& x, DType dtype, bool training) {
    return to_host(*backend, model.forward(values_on_device(*backend, batch_shape(), x, dtype), training));
  }
  std::vector<float> buffer(const std::string& name) {
    const std::vector<float> all = to_host(*backend, model.flat_buffers(DType::f32));
    for (const nn::BufferSlot& b : model.buffer_slots())
      if (b.name == name) return {all.begin() + b.offset, all.begin() + b.offset + b.count};
    ADD_FAILURE() << "no buffer " << name;
    return {};
  }
  int64_t batches_tracked() {
    return to_host<int64_t>(*backend, model.flat_buffers(DType::i64)).at(0);
  }
};

// Per-channel mean and biased variance of rows [rows, C], in double.
void channel_statistics(const std::vector<float>& x, int64_t c, std::vector<double>& mean, std::vector<double>& var) {
  const int64_t rows = static_cast<int64_t>(x.size()) / c;
  mean.assign(static_cast<size_t>(c), 0.0);
  var.assign(static_cast<size_t>(c), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < c; ++k) mean[static_cast<size_t>(k)] += x[static_cast<size_t>(r * c + k)] / double(rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < c; ++k) {
      const double d = x[static_cast<size_t>(r * c + k)] - mean[static_cast<size_t>(k)];
      var[static_cast<size_t>(k)] += d * d / double(rows);
    }
}

// y = (x - mean) / sqrt(var + eps) * weight + bias, in double, with the test's weight and bias.
std::vector<float> expected_output(const std::vector<float>& x, int64_t c, const std::vector<double>& mean,
                                   const std::vector<double>& var) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t k = i % static_cast<size_t>(c);
    y[i] = static_cast<float>((x[i] - mean[k]) / std::sqrt(var[k] + 1e-5) * (1.0 + 0.1 * k) + 0.05 * k);
  }
  return y;
}

}  // namespace

TEST(BatchNorm, TrainingNormalizesWithTheBatchAndMovesTheRunningStatistics) {
  BatchNormRun bn(DeviceKind::cpu, DType::f32);
  const int64_t c = kSample.back(), n = kBatch * 20;
  const std::vector<float> x = normal_values(n * c, 2.0f, 3.0f, 5);
  const std::vector<float> y = bn.forward(x, DType::f32, true);
  std::vector<double> mean, var;
  channel_statistics(x, c, mean, var);
  const std::vector<float> want = expected_output(x, c, mean, var);
  EXPECT_TRUE(tensors_close(y.data(), want.data(), static_cast<int64_t>(y.size()), 1e-5, 1e-5));
  const std::vector<float> rm = bn.buffer("bn.running_mean"), rv = bn.buffer("bn.running_var");
  for (int64_t k = 0; k < c; ++k) {
    EXPECT_NEAR(rm[static_cast<size_t>(k)], 0.1 * mean[static_cast<size_t>(k)], 1e-5) << k;
    // The unbiased variance (n / (n - 1)) enters the running variance, as in PyTorch.
    EXPECT_NEAR(rv[static_cast<size_t>(k)], 0.9 + 0.1 * var[static_cast<size_t>(k)] * n / (n - 1), 1e-5) << k;
  }
  EXPECT_EQ(bn.batches_tracked(), 1);
  bn.forward(x, DType::f32, true);
  EXPECT_EQ(bn.batches_tracked(), 2);
  EXPECT_NEAR(bn.buffer("bn.running_mean")[1], 0.19 * mean[1], 1e-5);
}

TEST(BatchNorm, EvaluationUsesTheRunningStatisticsAndLeavesThemAlone) {
  BatchNormRun bn(DeviceKind::cpu, DType::f32);
  const int64_t c = kSample.back(), n = kBatch * 20;
  const std::vector<float> x = normal_values(n * c, 1.0f, 2.0f, 6);
  bn.forward(x, DType::f32, true);
  const std::vector<float> rm = bn.buffer("bn.running_mean"), rv = bn.buffer("bn.running_var");
  const std::vector<float> y = bn.forward(x, DType::f32, false);
  const std::vector<double> mean(rm.begin(), rm.end()), var(rv.begin(), rv.end());
  const std::vector<float> want = expected_output(x, c, mean, var);
  EXPECT_TRUE(tensors_close(y.data(), want.data(), static_cast<int64_t>(y.size()), 1e-5, 1e-5));
  EXPECT_EQ(bn.buffer("bn.running_mean"), rm);
  EXPECT_EQ(bn.batches_tracked(), 1);
}

// Values near 1e4 with unit spread: E[x^2] - E[x]^2 in f32 would lose the variance altogether (its
// rounding, ~6e-8 of 1e8, is several times the variance); two passes keep it. What remains is the
// f32 rounding of x and of the mean near 1e4 (up to 5e-4 each), hence the absolute tolerance.
TEST(BatchNorm, StatisticsStayExactOnALargeOffset) {
  BatchNormRun bn(DeviceKind::cpu, DType::f32);
  const int64_t c = kSample.back(), n = kBatch * 20;
  const std::vector<float> x = normal_values(n * c, 1e4f, 1.0f, 7);
  const std::vector<float> y = bn.forward(x, DType::f32, true);
  std::vector<double> mean, var;
  channel_statistics(x, c, mean, var);
  const std::vector<float> want = expected_output(x, c, mean, var);
  EXPECT_TRUE(tensors_close(y.data(), want.data(), static_cast<int64_t>(y.size()), 1e-3, 3e-3));
}

TEST(BatchNorm, FusedReluEqualsAReluLayerAfterIt) {
  const int64_t n = kBatch * 20, c = kSample.back();
  const std::vector<float> x = normal_values(n * c, 0.0f, 1.0f, 8);
  BatchNormRun fused(DeviceKind::cpu, DType::f32, nn::Activation::relu);
  BatchNormRun plain(DeviceKind::cpu, DType::f32);
  std::vector<float> y = plain.forward(x, DType::f32, true);
  for (float& v : y) v = std::max(v, 0.0f);
  EXPECT_EQ(fused.forward(x, DType::f32, true), y);
}

// Each DType: cpu and sim run the same functors in the same order, so they agree bitwise, and bf16
// and f16 stay within their rounding of f32.
TEST(BatchNorm, BackendsAgreeAndLowPrecisionStaysNearF32) {
  const int64_t n = kBatch * 20, c = kSample.back();
  const std::vector<float> x = normal_values(n * c, 0.5f, 1.5f, 9);
  const std::vector<float> ref = BatchNormRun(DeviceKind::cpu, DType::f32).forward(x, DType::f32, true);
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    const std::vector<float> cpu = BatchNormRun(DeviceKind::cpu, dtype).forward(x, dtype, true);
    EXPECT_EQ(BatchNormRun(DeviceKind::sim, dtype).forward(x, dtype, true), cpu) << dtype_name(dtype);
    const double tol = dtype == DType::bf16 ? 2e-2 : dtype == DType::f16 ? 3e-3 : 1e-7;
    EXPECT_TRUE(tensors_close(cpu.data(), ref.data(), static_cast<int64_t>(ref.size()), tol, tol)) << dtype_name(dtype);
  }
}

TEST(BatchNorm, DeclaresPyTorchsParametersAndBuffers) {
  BatchNormRun bn(DeviceKind::cpu, DType::f32);
  std::vector<std::string> names;
  for (const nn::ParameterSlot& s : bn.model.slots()) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"bn.bias", "bn.weight"}));
  names.clear();
  for (const nn::BufferSlot& b : bn.model.buffer_slots()) names.push_back(b.name + ":" + std::string(dtype_name(b.dtype)));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"bn.num_batches_tracked:i64", "bn.running_mean:f32", "bn.running_var:f32"}));
  for (const nn::Parameter& p : bn.model.layers()[0]->parameters()) EXPECT_TRUE(p.norm) << p.name;
  EXPECT_FLOAT_EQ(bn.buffer("bn.running_var")[0], 1.0f);
}

namespace {

constexpr int64_t kFoldBatch = 4;
const Shape kFoldSample{12, 12, 3};

struct FoldRun {
  std::vector<float> train_logits, eval_logits;
  int folded = 0;
};

// resnet20 on `kind` in `dtype`, with or without BatchNorm folded into the convolutions for
// evaluation: two training forwards (the running statistics move away from their start), then one
// evaluation forward.
FoldRun run_resnet20(DeviceKind kind, DType dtype, bool fold, const std::vector<float>& x) {
  auto backend = backend_of(kind);
  auto m = nn::make_zoo_model("resnet20", kFoldSample, 10);
  m->set_batch_norm_folding(fold);
  m->build(*backend, kFoldBatch, dtype);
  m->init_parameters(5);
  const Tensor xd = values_on_device(*backend, nn::with_batch(kFoldBatch, kFoldSample), x, dtype);
  FoldRun r;
  for (int step = 0; step < 2; ++step) r.train_logits = to_host(*backend, m->forward(xd, true));
  r.eval_logits = to_host(*backend, m->forward(xd, false));
  for (const auto& l : m->layers())
    if (const auto* bn = dynamic_cast<const nn::BatchNorm2d*>(l.get()); bn && bn->folded()) ++r.folded;
  return r;
}

}  // namespace

// Folding changes only the rounding of evaluation (the filters scaled before the convolution instead
// of its output after it), so the logits agree to a few ulps per layer; training is untouched.
TEST(BatchNormFolding, EvaluationMatchesTheUnfoldedModelAndTrainingIsUntouched) {
  const std::vector<float> x = normal_values(kFoldBatch * shape_numel(kFoldSample), 0.2f, 1.0f, 11);
  for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::sim}) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(device_kind_name(kind) + " " + std::string(dtype_name(dtype)));
      const FoldRun folded = run_resnet20(kind, dtype, true, x);
      const FoldRun plain = run_resnet20(kind, dtype, false, x);
      EXPECT_EQ(folded.folded, 19) << "every BatchNorm of resnet20 follows a convolution it alone reads";
      EXPECT_EQ(plain.folded, 0);
      EXPECT_EQ(folded.train_logits, plain.train_logits);
      const int64_t n = static_cast<int64_t>(plain.eval_logits.size());
      double scale = 0;
      for (float v : plain.eval_logits) scale = std::max(scale, std::fabs(static_cast<double>(v)));
      const double tol = dtype == DType::f32 ? 1e-4 : 5e-2;
      EXPECT_TRUE(tensors_close(folded.eval_logits.data(), plain.eval_logits.data(), n, tol, tol * scale));
      EXPECT_NE(plain.eval_logits, plain.train_logits) << "evaluation must use the running statistics";
    }
  }
}

// Only a BatchNorm that alone reads a convolution without an activation folds.
TEST(BatchNormFolding, OnlyTheConvolutionsSoleConsumerWithoutAnActivationFolds) {
  auto backend = make_cpu_backend();
  nn::Model m("fold", nn::ParameterNaming::node);
  const auto conv = [](nn::Activation act) { return nn::Conv2DOptions{4, 3, 1, nn::Padding::same, 1, false, act}; };
  std::string a = m.node<nn::Conv2D>({nn::Model::input()}, "a", conv(nn::Activation::none));
  std::string a_bn = m.node<nn::BatchNorm2d>({a}, "a_bn", nn::Activation::relu);
  std::string b = m.node<nn::Conv2D>({a_bn}, "b", conv(nn::Activation::relu));
  std::string b_bn = m.node<nn::BatchNorm2d>({b}, "b_bn");
  std::string c = m.node<nn::Conv2D>({b_bn}, "c", conv(nn::Activation::none));
  std::string c_bn = m.node<nn::BatchNorm2d>({c}, "c_bn");
  m.node<nn::Add>({c, c_bn}, "add");
  m.configure({6, 6, 2});
  m.build(*backend, 2, DType::f32);
  std::map<std::string, bool> folded;
  for (const auto& l : m.layers())
    if (const auto* bn = dynamic_cast<const nn::BatchNorm2d*>(l.get())) folded[bn->name()] = bn->folded();
  EXPECT_EQ(folded, (std::map<std::string, bool>{{"a_bn", true}, {"b_bn", false}, {"c_bn", false}}));
}
