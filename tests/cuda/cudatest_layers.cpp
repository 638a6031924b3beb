// GPU test: every layer type of the zoo, alone in a one-layer model, on the CUDA backend against the
// CPU backend with the same initial weights, input and logit gradient: the outputs and the
// parameter gradients agree within a tolerance per compute type (f32 with TF32 off, bf16, f16).
// The operators' own tests (cudatest_conv, cudatest_pool, cudatest_inner_product) cover each
// direction of each op; this one covers the layers around them (bias, fused activations, the
// compute-type copies of the weights, the casts of the model's input and logits).
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/model.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "support/layer_harness.hpp"

namespace scaletrain::testing {
namespace {

using nn::Activation;
using nn::Padding;

struct LayerCase {
  std::string name;
  std::function<nn::LayerPtr()> make;
  Shape in_sample;
};

std::vector<LayerCase> layer_cases() {
  return {
      {"conv_same_relu",
       [] {
         return std::make_unique<nn::Conv2D>("c", nn::Conv2DOptions{6, 5, 1, Padding::same, 1, true, Activation::relu});
       },
       {28, 28, 1}},
      {"conv_valid_selu",
       [] {
         return std::make_unique<nn::Conv2D>("c",
                                             nn::Conv2DOptions{16, 5, 1, Padding::valid, 1, true, Activation::selu});
       },
       {14, 14, 6}},
      {"conv_stride2_same",
       [] {
         return std::make_unique<nn::Conv2D>("c",
                                             nn::Conv2DOptions{10, 3, 2, Padding::same, 1, true, Activation::none});
       },
       {9, 9, 7}},
      {"conv_grouped",
       [] {
         return std::make_unique<nn::Conv2D>("c",
                                             nn::Conv2DOptions{12, 3, 1, Padding::same, 3, false, Activation::none});
       },
       {7, 7, 6}},
      {"depthwise",
       [] { return std::make_unique<nn::DepthwiseConv2D>("d", 3, 1, Padding::same, true, Activation::none); },
       {11, 11, 13}},
      {"separable_selu",
       [] { return std::make_unique<nn::SeparableConv2D>("s", 20, 3, 1, Padding::same, Activation::selu); },
       {14, 14, 17}},
      {"maxpool", [] { return std::make_unique<nn::MaxPool2D>("p", 2); }, {14, 14, 9}},
      {"maxpool_same_odd", [] { return std::make_unique<nn::MaxPool2D>("p", 2, 2, Padding::same); }, {7, 7, 5}},
      // PyTorch's explicit padding (torchvision's ResNet) on even sizes, the last row and column of
      // padding (of the input, for 1x1/2) in no window: cuDNN's symmetric descriptors.
      {"conv_7x7_stride2_pad3",
       [] {
         return std::make_unique<nn::Conv2D>(
             "c", nn::Conv2DOptions{16, 7, 2, Padding::symmetric(3), 1, false, Activation::relu});
       },
       {16, 16, 3}},
      {"conv_3x3_stride2_pad1",
       [] {
         return std::make_unique<nn::Conv2D>(
             "c", nn::Conv2DOptions{12, 3, 2, Padding::symmetric(1), 1, true, Activation::none});
       },
       {8, 8, 6}},
      {"conv_1x1_stride2",
       [] {
         return std::make_unique<nn::Conv2D>(
             "c", nn::Conv2DOptions{12, 1, 2, Padding::symmetric(0), 1, false, Activation::none});
       },
       {8, 8, 8}},
      {"maxpool_3x3_stride2_pad1",
       [] { return std::make_unique<nn::MaxPool2D>("p", 3, 2, Padding::symmetric(1)); },
       {8, 8, 5}},
      {"avgpool_3x3_stride2_pad1",
       [] { return std::make_unique<nn::AvgPool2D>("p", 3, 2, Padding::symmetric(1)); },
       {9, 8, 5}},
      {"avgpool_same_odd", [] { return std::make_unique<nn::AvgPool2D>("p", 3, 2, Padding::same); }, {9, 9, 5}},
      {"global_avgpool", [] { return std::make_unique<nn::GlobalAvgPool>("g"); }, {5, 5, 19}},
      {"dense_relu", [] { return std::make_unique<nn::Dense>("f", 84, Activation::relu); }, {120}},
      {"dense_no_bias", [] { return std::make_unique<nn::Dense>("f", 10, Activation::none, false); }, {37}},
  };
}

// A host tensor of `n` values from `v`, stored in `dtype`.
Tensor host_input(const std::vector<float>& v, const Shape& shape, DType dtype) {
  Tensor t(shape, dtype, "x (host)");
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::f32)
      t.data<float>()[i] = v[i];
    else if (dtype == DType::bf16)
      t.data<bf16>()[i] = from_float<bf16>(v[i]);
    else
      t.data<f16>()[i] = from_float<f16>(v[i]);
  }
  return t;
}

struct LayerRun {
  std::vector<float> y, grads;
};

// One forward (training) and backward of the one-layer model on `backend`.
LayerRun run_layer(Backend& backend, const LayerCase& c, DType dtype, int64_t batch, const std::vector<float>& x,
                   const std::vector<float>& dy) {
  nn::Model m("one_layer");
  m.add(c.make());
  m.configure(c.in_sample);
  m.build(backend, batch, dtype);
  m.init_parameters(7);
  m.refresh_compute_parameters();
  Shape xs = c.in_sample;
  xs.insert(xs.begin(), batch);
  const Tensor xh = host_input(x, xs, dtype);
  Tensor xd = backend.empty(xs, dtype, "x");
  backend.copy_async(backend.compute_stream(), xd, xh);
  const Tensor& logits = m.forward(xd, true);
  Tensor dyd = backend.empty(logits.shape(), DType::f32, "dy");
  backend.upload(dyd, dy);
  m.backward(dyd);
  LayerRun r;
  const Tensor yh = backend.download(logits);
  r.y.assign(yh.data<float>(), yh.data<float>() + yh.numel());
  const Tensor gh = backend.download(m.flat_gradients());
  r.grads.assign(gh.data<float>(), gh.data<float>() + gh.numel());
  return r;
}

class CudaLayers : public CudaTest, public ::testing::WithParamInterface<DType> {};

TEST_P(CudaLayers, EveryLayerMatchesTheCpuBackend) {
  const DType dtype = GetParam();
  const double rtol = dtype == DType::f32 ? 1e-4 : (dtype == DType::bf16 ? 3e-2 : 5e-3);
  const double atol = dtype == DType::f32 ? 1e-5 : (dtype == DType::bf16 ? 3e-2 : 5e-3);
  auto cpu = make_cpu_backend(1);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const LayerCase& c : layer_cases()) {
    SCOPED_TRACE(c.name + " in " + std::string(dtype_name(dtype)));
    const int64_t batch = 3;
    int64_t in = batch;
    for (int64_t d : c.in_sample) in *= d;
    std::vector<float> x(static_cast<size_t>(in));
    for (float& v : x) v = u(rng);
    // The output size from a CPU run's logits, then a gradient of that size.
    nn::Model probe("probe");
    probe.add(c.make());
    probe.configure(c.in_sample);
    int64_t out = batch;
    for (int64_t d : probe.output_shape()) out *= d;
    std::vector<float> dy(static_cast<size_t>(out));
    for (float& v : dy) v = u(rng);
    const LayerRun want = run_layer(*cpu, c, dtype, batch, x, dy);
    const LayerRun got = run_layer(*backend, c, dtype, batch, x, dy);
    ASSERT_EQ(got.y.size(), want.y.size());
    EXPECT_TRUE(tensors_close(got.y.data(), want.y.data(), static_cast<int64_t>(want.y.size()), rtol, atol))
        << "output";
    ASSERT_EQ(got.grads.size(), want.grads.size());
    // Weight gradients sum over batch x positions: scale the absolute tolerance with the input size.
    EXPECT_TRUE(tensors_close(got.grads.data(), want.grads.data(), static_cast<int64_t>(want.grads.size()), rtol,
                              atol * std::sqrt(static_cast<double>(in))))
        << "parameter gradients";
  }
  EXPECT_FALSE(backend->operator_choices().empty());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaLayers, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace scaletrain::testing
