// Every layer's forward and backward against PyTorch 1.13 (tests/data/layer_reference.h5, made by
// tests/reference/make_layer_reference.py): same inputs and weights, outputs and gradients compared.
// The convolution and pooling cases (Keras and explicit padding, rectangular kernels, averages counting
// the padding, adaptive pooling) and ReLU6 also run on the cpu and sim devices in f32, bf16 and f16: f32 against
// PyTorch, bf16 and f16 against the same device's f32 run on the inputs and weights rounded to that type, within that
// type's rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "scaletrain/core/half.hpp"
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
  if (type == "Conv2D") {
    const int64_t kh = f.attr_int(g, "kernel");
    const int64_t kw = f.has_attr(g, "kernel_w") ? f.attr_int(g, "kernel_w") : kh;
    return std::make_unique<nn::Conv2D>(
        "", nn::Conv2DOptions{f.attr_int(g, "filters"), {kh, kw}, f.attr_int(g, "stride"), pad(), 1, true, act()});
  }
  if (type == "DepthwiseConv2D")
    return std::make_unique<nn::DepthwiseConv2D>("", f.attr_int(g, "kernel"), f.attr_int(g, "stride"), pad(), true,
                                                 act());
  if (type == "SeparableConv2D")
    return std::make_unique<nn::SeparableConv2D>("", f.attr_int(g, "filters"), f.attr_int(g, "kernel"),
                                                 f.attr_int(g, "stride"), pad(), act());
  if (type == "MaxPool2D") return std::make_unique<nn::MaxPool2D>("", f.attr_int(g, "pool"), f.attr_int(g, "stride"), pad());
  if (type == "AvgPool2D")
    return std::make_unique<nn::AvgPool2D>("", f.attr_int(g, "pool"), f.attr_int(g, "stride"), pad(),
                                           f.has_attr(g, "count_include_pad") && f.attr_int(g, "count_include_pad"));
  if (type == "AdaptiveAvgPool2D")
    return std::make_unique<nn::AdaptiveAvgPool2D>("", f.attr_int(g, "out_h"), f.attr_int(g, "out_w"));
  if (type == "GlobalAvgPool") return std::make_unique<nn::GlobalAvgPool>("");
  if (type == "Flatten") return std::make_unique<nn::Flatten>("");
  if (type == "ReLU") return std::make_unique<nn::ActivationLayer>("", nn::Activation::relu);
  if (type == "SELU") return std::make_unique<nn::ActivationLayer>("", nn::Activation::selu);
  if (type == "ReLU6") return std::make_unique<nn::ActivationLayer>("", nn::Activation::relu6);
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

using Values = std::vector<float>;

Values values_of(const Tensor& host) {
  Values v(static_cast<size_t>(host.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (host.dtype() == DType::f32)
      v[i] = host.data<float>()[i];
    else if (host.dtype() == DType::bf16)
      v[i] = to_float(host.data<bf16>()[i]);
    else
      v[i] = to_float(host.data<f16>()[i]);
  }
  return v;
}

// A host tensor holding `v` stored as `t`.
Tensor host_tensor(const Values& v, const Shape& shape, DType t) {
  Tensor h(shape, t, "host");
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::f32)
      h.data<float>()[i] = v[i];
    else if (t == DType::bf16)
      h.data<bf16>()[i] = from_float<bf16>(v[i]);
    else
      h.data<f16>()[i] = from_float<f16>(v[i]);
  }
  return h;
}

// The values of v once stored as t.
Values rounded(const Values& v, DType t) { return values_of(host_tensor(v, {static_cast<int64_t>(v.size())}, t)); }

struct DeviceRun {
  Values y, dx;
  std::vector<Values> grads;  // in the layer's parameters() order
};

// One training forward and backward of case g's layer on `backend`, computing in t, from x, the
// parameters (f32 master weights, in parameters() order) and dy.
DeviceRun run_on(Backend& backend, const ReferenceFile& f, const std::string& g, DType t, const Values& x,
                 const std::vector<Values>& params, const Values& dy) {
  const auto in_shape = f.attr_ints(g, "in_shape");
  const Tensor x_ref = f.dataset(g + "/x");
  nn::Model m("reference");
  m.add(make_layer(f, g));
  m.configure(Shape(in_shape.begin(), in_shape.end()));
  m.build(backend, x_ref.dim(0), t);
  nn::Layer& layer = *m.layers()[0];
  for (size_t i = 0; i < params.size(); ++i) backend.upload(layer.parameters()[i].value, params[i]);
  m.refresh_compute_parameters();
  Tensor xd = backend.empty(x_ref.shape(), t, "x");
  backend.copy_async(backend.compute_stream(), xd, host_tensor(x, x_ref.shape(), t));
  DeviceRun r;
  r.y = values_of(backend.download(m.forward(xd, true)));  // the logits: f32
  Shape y_shape = layer.output_shape();
  y_shape.insert(y_shape.begin(), x_ref.dim(0));
  Tensor dyd = backend.empty(y_shape, t, "dy");
  backend.copy_async(backend.compute_stream(), dyd, host_tensor(dy, y_shape, t));
  r.dx = values_of(backend.download(layer.backward(dyd, true)));
  for (const auto& p : layer.parameters()) r.grads.push_back(values_of(backend.download(p.grad)));
  return r;
}

// max |got - want| <= rtol * max |want|: a low-precision result against the f32 one.
::testing::AssertionResult near_at_scale(const Values& got, const Values& want, double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
  double scale = 0, worst = 0;
  size_t where = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= worst)) {
      worst = err;
      where = i;
    }
  }
  if (worst <= rtol * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "element " << where << ": " << got[where] << " vs " << want[where]
                                       << ", off by " << worst << " > " << rtol << " * " << scale;
}

using DeviceCase = std::tuple<std::string, DeviceKind, DType>;

class PyTorchReferenceOnDevices : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(PyTorchReferenceOnDevices, ForwardAndBackwardMatch) {
  const auto& [g, kind, t] = GetParam();
  ReferenceFile f(kFile);
  std::unique_ptr<Backend> backend;
  if (kind == DeviceKind::sim) {
    BackendOptions options;
    options.kind = DeviceKind::sim;
    backend = make_sim_backend(options);
  } else {
    backend = make_cpu_backend();
  }
  nn::LayerPtr probe = make_layer(f, g);
  std::vector<std::string> names;
  {
    nn::Model m("probe");
    m.add(std::move(probe));
    const auto in_shape = f.attr_ints(g, "in_shape");
    m.configure(Shape(in_shape.begin(), in_shape.end()));
    for (const auto& p : m.layers()[0]->parameters()) names.push_back(p.name);
  }
  // Inputs in t's values, so that the f32 run below computes on the same numbers.
  const Values x = rounded(values_of(f.dataset(g + "/x")), t), dy = rounded(values_of(f.dataset(g + "/dy")), t);
  std::vector<Values> params;
  for (const auto& name : names) params.push_back(rounded(values_of(f.dataset(g + "/" + name)), t));
  const DeviceRun got = run_on(*backend, f, g, t, x, params, dy);
  if (t == DType::f32) {
    const Values y = values_of(f.dataset(g + "/y")), dx = values_of(f.dataset(g + "/dx"));
    ASSERT_EQ(got.y.size(), y.size());
    EXPECT_TRUE(tensors_close(got.y.data(), y.data(), static_cast<int64_t>(y.size()), 1e-4, 1e-5)) << "forward";
    ASSERT_EQ(got.dx.size(), dx.size());
    EXPECT_TRUE(tensors_close(got.dx.data(), dx.data(), static_cast<int64_t>(dx.size()), 1e-4, 1e-5)) << "dx";
    for (size_t i = 0; i < names.size(); ++i) {
      const Values want = values_of(f.dataset(g + "/d" + names[i]));
      ASSERT_EQ(got.grads[i].size(), want.size());
      EXPECT_TRUE(tensors_close(got.grads[i].data(), want.data(), static_cast<int64_t>(want.size()), 1e-4, 1e-4))
          << "d" << names[i];
    }
    return;
  }
  const DeviceRun want = run_on(*backend, f, g, DType::f32, x, params, dy);
  const double rtol = t == DType::bf16 ? 2e-2 : 2e-3;  // the storage type's rounding, as test_backend_precision
  EXPECT_TRUE(near_at_scale(got.y, want.y, rtol)) << "forward";
  EXPECT_TRUE(near_at_scale(got.dx, want.dx, rtol)) << "dx";
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_TRUE(near_at_scale(got.grads[i], want.grads[i], rtol)) << "d" << names[i];
}

// The cases of the layers that pad: convolutions and pooling, on each device and storage type.
std::vector<DeviceCase> device_cases() {
  ReferenceFile f(kFile);
  std::vector<DeviceCase> out;
  for (const auto& g : f.groups()) {
    if (g == "softmax_cross_entropy") continue;
    const std::string type = f.attr_string(g, "type");
    if (type != "Conv2D" && type != "DepthwiseConv2D" && type != "SeparableConv2D" && type != "MaxPool2D" &&
        type != "AvgPool2D" && type != "AdaptiveAvgPool2D" && type != "ReLU6")
      continue;
    for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::sim})
      for (DType t : {DType::f32, DType::bf16, DType::f16}) out.emplace_back(g, kind, t);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Layers, PyTorchReferenceOnDevices, ::testing::ValuesIn(device_cases()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + device_kind_name(std::get<1>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<2>(info.param)));
                         });

TEST(PyTorchReferencePadding, ExplicitPaddingParsesAndNamesItself) {
  EXPECT_EQ(nn::parse_padding("same"), nn::Padding::same);
  EXPECT_EQ(nn::parse_padding("valid"), nn::Padding::valid);
  EXPECT_EQ(nn::parse_padding("3"), nn::Padding::symmetric(3));
  EXPECT_EQ(nn::parse_padding("0").to_string(), "0");
  EXPECT_NE(nn::parse_padding("1"), nn::Padding::same);
  EXPECT_THROW(nn::parse_padding("-1"), Error);
  EXPECT_THROW(nn::parse_padding("full"), Error);
  EXPECT_THROW(nn::Padding::symmetric(-2), Error);
  const nn::Pad2D p = nn::compute_padding(nn::Padding::symmetric(3), 16, 15, 7, 7, 2, 2);
  EXPECT_EQ(std::vector<int64_t>({p.top, p.left, p.bottom, p.right}), std::vector<int64_t>({3, 3, 3, 3}));
}

// Explicit padding of a pooling may be at most half the pool size (PyTorch's rule); the error names
// the layer.
TEST(PyTorchReferencePadding, PoolingPaddingOverHalfThePoolIsAnErrorNamingTheLayer) {
  nn::Model m("pool");
  m.add(std::make_unique<nn::MaxPool2D>("stem_pool", 3, 2, nn::Padding::symmetric(2)));
  try {
    m.configure({8, 8, 4});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("stem_pool"), std::string::npos) << what;
    EXPECT_NE(what.find("padding 2 is more than half the pool size 3"), std::string::npos) << what;
  }
  nn::Model ok("pool");
  ok.add(std::make_unique<nn::MaxPool2D>("stem_pool", 3, 2, nn::Padding::symmetric(1)));
  ok.configure({8, 8, 4});
  EXPECT_EQ(ok.output_shape(), Shape({4, 4, 4}));
}

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
