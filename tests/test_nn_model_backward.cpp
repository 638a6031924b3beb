// Model::backward: no gradient flows into the input, so the first layer with parameters computes no
// dx and the layers before it (mlp's Flatten) run no backward; every layer is still reported done,
// in reverse order, so that the gradient buckets see all of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/model.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/zoo.hpp"

using namespace scaletrain;

namespace {

// What an identity layer saw of backward: how often it ran and the need_dx of its last call.
struct BackwardRecord {
  int calls = 0;
  bool need_dx = false;
};

class RecordingIdentity final : public nn::Layer {
 public:
  RecordingIdentity(std::shared_ptr<BackwardRecord> record, bool with_parameter)
      : Layer(""), record_(std::move(record)), with_parameter_(with_parameter) {}
  std::string type() const override { return "RecordingIdentity"; }
  Shape configure(const Shape& in) override {
    in_shape_ = out_shape_ = in;
    params_.clear();
    if (with_parameter_) declare("unused", {1}, nn::Init::zeros, 0, 0);
    return out_shape_;
  }
  void build(Backend&, int64_t) override {}
  const Tensor& forward(const Tensor& x, bool) override { return y_ = x; }
  const Tensor& backward(const Tensor& dy, bool need_dx) override {
    ++record_->calls;
    record_->need_dx = need_dx;
    if (!need_dx) return nn::no_gradient();
    return dx_ = dy;
  }

 private:
  std::shared_ptr<BackwardRecord> record_;
  bool with_parameter_;
  Tensor y_, dx_;
};

TEST(ModelBackward, NoGradientFlowsBeforeTheFirstLayerWithParameters) {
  auto before = std::make_shared<BackwardRecord>();
  auto first_trained = std::make_shared<BackwardRecord>();
  auto between = std::make_shared<BackwardRecord>();
  nn::Model m("recorded");
  m.add(std::make_unique<RecordingIdentity>(before, false));
  m.add(std::make_unique<RecordingIdentity>(first_trained, true));
  m.add(std::make_unique<RecordingIdentity>(between, false));
  m.add(std::make_unique<nn::Dense>("", 3));
  m.configure({5});
  const std::unique_ptr<Backend> backend = make_cpu_backend();
  m.build(*backend, 2);
  Tensor x({2, 5});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i);
  m.forward(x, true);
  Tensor dlogits({2, 3});
  for (int64_t i = 0; i < dlogits.numel(); ++i) dlogits.data<float>()[i] = 1.0f;

  std::vector<size_t> done;
  m.backward(dlogits, [&](size_t layer) { done.push_back(layer); });
  backend->synchronize();

  EXPECT_EQ(before->calls, 0);
  EXPECT_EQ(first_trained->calls, 1);
  EXPECT_FALSE(first_trained->need_dx);
  EXPECT_EQ(between->calls, 1);
  EXPECT_TRUE(between->need_dx);
  EXPECT_EQ(done, (std::vector<size_t>{3, 2, 1, 0}));
}

// The mlp (Flatten, then Dense): its weight gradients are those of a model without the Flatten,
// whose first Dense has always been the first layer.
TEST(ModelBackward, MlpGradientsDoNotDependOnTheLeadingFlatten) {
  auto with_flatten = nn::make_zoo_model("mlp", {28, 28, 1}, 10);
  nn::Model flat("flat_mlp");
  flat.add(std::make_unique<nn::Dense>("", 256, nn::Activation::relu));
  flat.add(std::make_unique<nn::Dense>("", 128, nn::Activation::relu));
  flat.add(std::make_unique<nn::Dense>("", 10));
  flat.configure({784});
  const std::unique_ptr<Backend> backend = make_cpu_backend();
  const int64_t batch = 3;
  with_flatten->build(*backend, batch);
  flat.build(*backend, batch);
  ASSERT_EQ(with_flatten->parameter_count(), flat.parameter_count());
  std::copy_n(with_flatten->flat_parameters().data<float>(), flat.parameter_count(),
              flat.flat_parameters().data<float>());

  Tensor image({batch, 28, 28, 1}), dlogits({batch, 10});
  for (int64_t i = 0; i < image.numel(); ++i) image.data<float>()[i] = static_cast<float>((i * 37) % 101) / 101.0f;
  for (int64_t i = 0; i < dlogits.numel(); ++i) dlogits.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  with_flatten->forward(image, true);
  with_flatten->backward(dlogits);
  flat.forward(image.reshape({batch, 784}), true);
  flat.backward(dlogits);
  backend->synchronize();

  const float* a = with_flatten->flat_gradients().data<float>();
  const float* b = flat.flat_gradients().data<float>();
  double largest = 0;
  for (int64_t i = 0; i < flat.parameter_count(); ++i)
    largest = std::max(largest, static_cast<double>(std::fabs(b[i])));
  ASSERT_GT(largest, 0.0);
  for (int64_t i = 0; i < flat.parameter_count(); ++i) ASSERT_EQ(a[i], b[i]) << "gradient " << i;
}

// `convolutions` (the last one's output pooled), an identity layer only when `apart`, then max pooling,
// Flatten and Dense, for samples of `sample`.
std::unique_ptr<nn::Model> pooled_model(std::vector<nn::LayerPtr> convolutions, bool apart, const Shape& sample) {
  auto m = std::make_unique<nn::Model>(apart ? "apart" : "adjacent");
  for (auto& c : convolutions) m->add(std::move(c));
  if (apart) m->add(std::make_unique<RecordingIdentity>(std::make_shared<BackwardRecord>(), false));
  m->add(std::make_unique<nn::MaxPool2D>(""));
  m->add(std::make_unique<nn::Flatten>(""));
  m->add(std::make_unique<nn::Dense>("", 5));
  m->configure(sample);
  return m;
}

nn::LayerPtr conv2d(int64_t filters, int64_t kernel, nn::Activation act) {
  return std::make_unique<nn::Conv2D>("", nn::Conv2DOptions{filters, kernel, 1, nn::Padding::same, 1, true, act});
}
nn::LayerPtr separable(int64_t filters) {
  return std::make_unique<nn::SeparableConv2D>("", filters, 3, 1, nn::Padding::same, nn::Activation::selu);
}

// A separable convolution of 18 channels into 19, then the pooling.
std::unique_ptr<nn::Model> separable_then_pool(bool apart) {
  std::vector<nn::LayerPtr> layers;
  layers.push_back(separable(19));
  return pooled_model(std::move(layers), apart, {9, 11, 18});
}

// LeNet's start: a convolution of one channel, then the pooling. With `second`, a convolution of one
// channel into one comes first, so that the pooled convolution computes its input gradient.
std::unique_ptr<nn::Model> conv_then_pool(bool apart, bool second) {
  std::vector<nn::LayerPtr> layers;
  if (second) layers.push_back(conv2d(1, 3, nn::Activation::selu));
  layers.push_back(conv2d(6, 5, nn::Activation::relu));
  return pooled_model(std::move(layers), apart, {9, 11, 1});
}

// Builds both models for `batch` on `backend` in `compute`, checks that the pooling layer at
// `pool_layer` is absorbed in `adjacent` and not in `apart` (one layer further on), and runs two steps:
// the output and every gradient must be equal bit for bit (the second step reuses what the first left
// in the ops). Returns adjacent's outputs and gradients of both steps.
std::vector<float> expect_pooling_absorbed_alike(Backend& backend, nn::Model& adjacent, nn::Model& apart,
                                                 int64_t batch, size_t pool_layer, const Shape& sample,
                                                 DType compute = DType::f32) {
  adjacent.build(backend, batch, compute);
  apart.build(backend, batch, compute);
  EXPECT_TRUE(static_cast<nn::Pool2D&>(*adjacent.layers()[pool_layer]).absorbed());
  EXPECT_FALSE(static_cast<nn::Pool2D&>(*apart.layers()[pool_layer + 1]).absorbed());
  adjacent.init_parameters(11);
  EXPECT_EQ(adjacent.parameter_count(), apart.parameter_count());
  backend.copy_async(backend.compute_stream(), apart.flat_parameters(), adjacent.flat_parameters());
  apart.refresh_compute_parameters();  // bf16: the compute copy of the copied f32 weights
  Shape shape{batch};
  shape.insert(shape.end(), sample.begin(), sample.end());
  Tensor image(shape, compute), dlogits({batch, 5});
  Tensor device_image = backend.empty(shape, compute, "image");
  Tensor device_dlogits = backend.empty({batch, 5}, DType::f32, "dlogits");
  std::vector<float> seen;
  for (int step = 0; step < 2; ++step) {
    for (int64_t i = 0; i < image.numel(); ++i) {
      const float v = static_cast<float>((i * 37 + step * 11) % 101) / 50.0f - 1.0f;
      if (compute == DType::bf16) image.data<bf16>()[i] = float_to_bf16(v);
      else image.data<float>()[i] = v;
    }
    for (int64_t i = 0; i < dlogits.numel(); ++i) dlogits.data<float>()[i] = static_cast<float>((i + step) % 7) - 3.0f;
    backend.copy_async(backend.compute_stream(), device_image, image);
    backend.copy_async(backend.compute_stream(), device_dlogits, dlogits);
    const Tensor logits = backend.download(adjacent.forward(device_image, true));
    const Tensor logits_apart = backend.download(apart.forward(device_image, true));
    adjacent.backward(device_dlogits);
    apart.backward(device_dlogits);
    const Tensor grads = backend.download(adjacent.flat_gradients());
    const Tensor grads_apart = backend.download(apart.flat_gradients());
    EXPECT_EQ(logits.dtype(), DType::f32);
    for (int64_t i = 0; i < logits.numel(); ++i) {
      EXPECT_EQ(logits.data<float>()[i], logits_apart.data<float>()[i]) << "step " << step << ", output " << i;
      seen.push_back(logits.data<float>()[i]);
    }
    const float* a = grads.data<float>();
    const float* b = grads_apart.data<float>();
    double largest = 0;
    for (int64_t i = 0; i < apart.parameter_count(); ++i) {
      EXPECT_EQ(a[i], b[i]) << "step " << step << ", gradient " << i;
      largest = std::max(largest, static_cast<double>(std::fabs(a[i])));
      seen.push_back(a[i]);
    }
    EXPECT_GT(largest, 0.0);
  }
  return seen;
}

std::vector<float> expect_pooling_absorbed_alike(nn::Model& adjacent, nn::Model& apart, int64_t batch,
                                                 size_t pool_layer, const Shape& sample,
                                                 DType compute = DType::f32) {
  const std::unique_ptr<Backend> backend = make_cpu_backend();
  return expect_pooling_absorbed_alike(*backend, adjacent, apart, batch, pool_layer, sample, compute);
}

// On the cpu backend in f32 the separable convolution runs the max pooling after it inside its own op
// (Model::build). The model's output and every gradient are those of the same layers with the pooling
// kept apart, bit for bit, over two steps (the second reuses what the first left in the op).
TEST(ModelBuild, SeparableConvolutionAbsorbsTheMaxPoolingAfterIt) {
  auto adjacent = separable_then_pool(false);
  auto apart = separable_then_pool(true);
  // Batch 9: two chunks of the fused op (7 images of 9x11, then 2); the pooling drops the last row and column.
  expect_pooling_absorbed_alike(*adjacent, *apart, 9, 1, {9, 11, 18});
}

// So does a convolution of one input channel (the narrow-rows op, LeNet's first layer), first in the
// model or after another convolution (then it computes its input gradient from the pooled one).
TEST(ModelBuild, OneChannelConvolutionAbsorbsTheMaxPoolingAfterIt) {
  for (bool second : {false, true}) {
    SCOPED_TRACE(second ? "second layer" : "first layer");
    auto adjacent = conv_then_pool(false, second);
    auto apart = conv_then_pool(true, second);
    expect_pooling_absorbed_alike(*adjacent, *apart, 3, second ? 2 : 1, {9, 11, 1});
  }
}

// The simulated device runs the cpu backend's operators with their pooling absorption: the same
// layers take the pooling over there (the fused separable convolution, the narrow-rows one) and give
// the cpu backend's outputs and gradients bit for bit; its start-up table names the same operators.
TEST(ModelBuild, SimulatedDeviceAbsorbsTheMaxPoolingAsTheCpuDoes) {
  struct Case {
    const char* what;
    std::function<std::unique_ptr<nn::Model>(bool apart)> model;
    size_t pool_layer;
    Shape sample;
  };
  const Case cases[] = {
      {"separable", [](bool apart) { return separable_then_pool(apart); }, 1, {9, 11, 18}},
      {"one-channel convolution", [](bool apart) { return conv_then_pool(apart, false); }, 1, {9, 11, 1}},
      {"one-channel convolution second", [](bool apart) { return conv_then_pool(apart, true); }, 2, {9, 11, 1}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::unique_ptr<Backend> cpu = make_cpu_backend();
    BackendOptions options;
    options.kind = DeviceKind::sim;
    const std::unique_ptr<Backend> sim = make_sim_backend(options);
    auto on_cpu = c.model(false), on_sim = c.model(false);
    auto apart_cpu = c.model(true), apart_sim = c.model(true);
    const std::vector<float> a =
        expect_pooling_absorbed_alike(*cpu, *on_cpu, *apart_cpu, 3, c.pool_layer, c.sample);
    const std::vector<float> b =
        expect_pooling_absorbed_alike(*sim, *on_sim, *apart_sim, 3, c.pool_layer, c.sample);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "value " << i;
    EXPECT_EQ(on_cpu->implementations(), on_sim->implementations());
    EXPECT_EQ(on_sim->layers()[c.pool_layer]->implementation(), "inside the layer before");
  }
}

// In bf16 the composed ops (oneDNN's convolution or matmul with the activation as a post-op) take the
// pooling over too: the activation's gradient formed at the pooled size. Three input channels, so that
// the Conv2D is oneDNN's. The cpu backend starts with the GEMMs on oneDNN's bf16 kernels on every CPU
// with native bf16 (run.cpu_bf16_gemm = auto sets another way only in a training run).
TEST(ModelBuild, Bf16ComposedConvolutionsAbsorbTheMaxPoolingAfterThem) {
  if (!make_cpu_backend()->precision_support(DType::bf16).native) GTEST_SKIP() << "bf16 is emulated on this CPU";
  for (bool separable_layer : {false, true}) {
    SCOPED_TRACE(separable_layer ? "SeparableConv2D" : "Conv2D");
    auto model = [&](bool apart) {
      std::vector<nn::LayerPtr> layers;
      layers.push_back(separable_layer ? separable(19) : conv2d(6, 3, nn::Activation::relu));
      return pooled_model(std::move(layers), apart, {9, 11, 3});
    };
    for (int64_t batch : {1, 3}) {
      auto adjacent = model(false), apart = model(true);
      expect_pooling_absorbed_alike(*adjacent, *apart, batch, 1, {9, 11, 3}, DType::bf16);
    }
  }
}

// With the bf16 GEMMs as f32 GEMMs on widened operands (run.cpu_bf16_gemm = f32, or auto where that
// timed faster), the separable convolution's pointwise half is the composed f32 op, which keeps the
// pooling its own layer; the same model on a backend with the GEMMs on oneDNN's bf16 kernels absorbs it.
TEST(ModelBuild, Bf16SeparableConvolutionAbsorbsThePoolingOnlyWithBf16Gemms) {
  if (!make_cpu_backend()->precision_support(DType::bf16).native) GTEST_SKIP() << "bf16 is emulated on this CPU";
  for (Bf16GemmCompute gemm : {Bf16GemmCompute::bf16, Bf16GemmCompute::f32}) {
    SCOPED_TRACE("run.cpu_bf16_gemm = " + bf16_gemm_compute_name(gemm));
    const std::unique_ptr<Backend> backend = make_cpu_backend(0, false, gemm);
    auto m = separable_then_pool(false);
    m->build(*backend, 3, DType::bf16);
    EXPECT_EQ(static_cast<nn::Pool2D&>(*m->layers()[1]).absorbed(), gemm == Bf16GemmCompute::bf16);
  }
}

// bf16 one-channel convolutions run the f32 op on widened copies, which leaves the pooling its own
// layer, also when the same model was built in f32 before.
TEST(ModelBuild, Bf16OneChannelConvolutionKeepsTheMaxPoolingApart) {
  auto m = conv_then_pool(false, false);
  const std::unique_ptr<Backend> backend = make_cpu_backend();
  m->build(*backend, 2);
  EXPECT_TRUE(static_cast<nn::Pool2D&>(*m->layers()[1]).absorbed());
  m->build(*backend, 2, DType::bf16);
  EXPECT_FALSE(static_cast<nn::Pool2D&>(*m->layers()[1]).absorbed());
}

}  // namespace
