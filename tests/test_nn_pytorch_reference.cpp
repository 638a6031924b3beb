// Every layer's forward and backward against PyTorch 1.13 (tests/data/layer_reference.h5, made by
// tests/reference/make_layer_reference.py): same inputs and weights, outputs and gradients compared.
#include <gtest/gtest.h>

#include <cstring>

#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "support/layer_harness.hpp"
#include "support/reference_file.hpp"

using namespace scaletrain;
using scaletrain::testing::LayerHarness;
using scaletrain::testing::ReferenceFile;
using scaletrain::testing::tensors_close;

namespace {

const std::string kFile = std::string(SCALETRAIN_TEST_DATA_DIR) + "/layer_reference.h5";

nn::LayerPtr make_layer(const ReferenceFile& f, const std::string& g) {
  const std::string type = f.attr_string(g, "type");
  auto act = [&] { return nn::parse_activation(f.attr_string(g, "activation")); };
  auto pad = [&] { return nn::parse_padding(f.attr_string(g, "padding")); };
  if (type == "Dense") return std::make_unique<nn::Dense>("", f.attr_int(g, "units"), act());
  if (type == "Conv2D")
    return std::make_unique<nn::Conv2D>(
        "", nn::Conv2DOptions{f.attr_int(g, "filters"), f.attr_int(g, "kernel"), f.attr_int(g, "stride"), pad(), 1,
                              true, act()});
  if (type == "DepthwiseConv2D")
    return std::make_unique<nn::DepthwiseConv2D>("", f.attr_int(g, "kernel"), f.attr_int(g, "stride"), pad(), true,
                                                 act());
  if (type == "SeparableConv2D")
    return std::make_unique<nn::SeparableConv2D>("", f.attr_int(g, "filters"), f.attr_int(g, "kernel"),
                                                 f.attr_int(g, "stride"), pad(), act());
  if (type == "MaxPool2D") return std::make_unique<nn::MaxPool2D>("", f.attr_int(g, "pool"), f.attr_int(g, "stride"), pad());
  if (type == "AvgPool2D") return std::make_unique<nn::AvgPool2D>("", f.attr_int(g, "pool"), f.attr_int(g, "stride"), pad());
  if (type == "GlobalAvgPool") return std::make_unique<nn::GlobalAvgPool>("");
  if (type == "Flatten") return std::make_unique<nn::Flatten>("");
  if (type == "ReLU") return std::make_unique<nn::ActivationLayer>("", nn::Activation::relu);
  if (type == "SELU") return std::make_unique<nn::ActivationLayer>("", nn::Activation::selu);
  if (type == "Dropout") return std::make_unique<nn::Dropout>("", static_cast<float>(f.attr_double(g, "rate")));
  ADD_FAILURE() << "no layer for reference type " << type;
  return nullptr;
}

class PyTorchReference : public ::testing::TestWithParam<std::string> {};

TEST_P(PyTorchReference, ForwardAndBackwardMatch) {
  ReferenceFile f(kFile);
  const std::string g = GetParam();
  const Tensor x = f.dataset(g + "/x");
  const auto in_shape = f.attr_ints(g, "in_shape");
  LayerHarness h(make_layer(f, g), Shape(in_shape.begin(), in_shape.end()), x.dim(0));
  const bool training = h.layer().type() != "Dropout";
  for (auto& p : h.layer().parameters()) {
    const Tensor ref = f.dataset(g + "/" + p.name);
    ASSERT_EQ(ref.shape(), p.shape) << "parameter " << p.name;
    std::memcpy(p.value.raw(), ref.raw(), ref.bytes());
  }
  const Tensor& y = h.model.forward(x, training);
  const Tensor y_ref = f.dataset(g + "/y");
  ASSERT_EQ(y.numel(), y_ref.numel());
  EXPECT_TRUE(tensors_close(y.data<float>(), y_ref.data<float>(), y.numel(), 1e-4, 1e-5)) << g << " forward";

  const Tensor dy = f.dataset(g + "/dy");
  const Tensor dy_shaped = dy.reshape(y.shape());  // layers may return their input: keep it alive
  const Tensor& dx = h.layer().backward(dy_shaped, true);
  const Tensor dx_ref = f.dataset(g + "/dx");
  ASSERT_EQ(dx.numel(), dx_ref.numel());
  EXPECT_TRUE(tensors_close(dx.data<float>(), dx_ref.data<float>(), dx.numel(), 1e-4, 1e-5)) << g << " dx";
  for (auto& p : h.layer().parameters()) {
    const Tensor ref = f.dataset(g + "/d" + p.name);
    EXPECT_TRUE(tensors_close(p.grad.data<float>(), ref.data<float>(), ref.numel(), 1e-4, 1e-4))
        << g << " d" << p.name;
  }
}

std::vector<std::string> layer_cases() {
  ReferenceFile f(kFile);
  std::vector<std::string> out;
  for (const auto& g : f.groups())
    if (g != "softmax_cross_entropy") out.push_back(g);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Layers, PyTorchReference, ::testing::ValuesIn(layer_cases()),
                         [](const auto& info) { return info.param; });

TEST(PyTorchReferenceLoss, SoftmaxCrossEntropyMatches) {
  ReferenceFile f(kFile);
  const Tensor logits = f.dataset("softmax_cross_entropy/logits");
  const Tensor labels = f.dataset("softmax_cross_entropy/labels", DType::i32);
  const Tensor dref = f.dataset("softmax_cross_entropy/dlogits");
  const std::unique_ptr<Backend> backend = make_cpu_backend();
  nn::SoftmaxCrossEntropy loss;
  loss.build(*backend, logits.dim(0), logits.dim(1));
  const nn::LossResult r = loss.forward_and_read(logits, labels);
  EXPECT_NEAR(r.mean_loss(), f.scalar_double("softmax_cross_entropy/loss"), 1e-5);
  const Tensor& d = loss.backward(1.0f / static_cast<float>(logits.dim(0)));
  EXPECT_TRUE(tensors_close(d.data<float>(), dref.data<float>(), d.numel(), 1e-4, 1e-6));
}

TEST(PyTorchReferenceLoss, LabelOutOfRangeIsAClearError) {
  const std::unique_ptr<Backend> backend = make_cpu_backend();
  nn::SoftmaxCrossEntropy loss;
  loss.build(*backend, 2, 10);
  Tensor logits = Tensor::zeros({2, 10});
  Tensor labels({2}, DType::i32);
  labels.data<int32_t>()[0] = 3;
  labels.data<int32_t>()[1] = 10;
  try {
    loss.forward(logits, labels);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 10 in row 1 is outside [0, 10)"), std::string::npos) << e.what();
  }
}

}  // namespace
