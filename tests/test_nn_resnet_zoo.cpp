// The zoo's ResNets: parameter counts (akamaster's resnet20, torchvision's resnet18 and resnet50), the
// parameter and buffer names against torchvision's state_dict keys (read from /usr/bin/python3 at test
// time), the initializers they ask for, and the option-A shortcut layer (SubsamplePad) against
// hand-computed values in f32 and bf16 on the cpu and sim backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "scaletrain/nn/subsample_pad.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::backend_of;

namespace {

TEST(ResnetZoo, ParameterCountsAreThoseOfTheReferenceModels) {
  EXPECT_EQ(nn::make_zoo_model("resnet20", {32, 32, 3}, 10)->parameter_count(), 269722);
  EXPECT_EQ(nn::make_zoo_model("resnet18", {224, 224, 3}, 1000)->parameter_count(), 11689512);
  EXPECT_EQ(nn::make_zoo_model("resnet50", {224, 224, 3}, 1000)->parameter_count(), 25557032);
}

TEST(ResnetZoo, Resnet20IsNamedAsAkamastersModule) {
  auto m = nn::make_zoo_model("resnet20", {32, 32, 3}, 10);
  std::set<std::string> params, buffers;
  for (const nn::ParameterSlot& s : m->slots()) params.insert(s.name);
  for (const nn::BufferSlot& b : m->buffer_slots()) buffers.insert(b.name);
  // conv1, bn1, 9 blocks of conv1/bn1/conv2/bn2, linear: 1 + 2 + 9 * 6 + 2 parameters, 3 buffers per BN.
  EXPECT_EQ(params.size(), 59u);
  EXPECT_EQ(buffers.size(), 19u * 3);
  for (const char* p : {"conv1.weight", "bn1.weight", "bn1.bias", "layer1.0.conv1.weight", "layer2.0.bn2.bias",
                        "layer3.2.conv2.weight", "linear.weight", "linear.bias"})
    EXPECT_TRUE(params.count(p)) << p;
  for (const char* b : {"bn1.running_mean", "layer1.0.bn1.running_mean", "layer3.2.bn2.num_batches_tracked"})
    EXPECT_TRUE(buffers.count(b)) << b;
  EXPECT_FALSE(params.count("layer2.0.shortcut.weight"));
  // The option-A shortcuts: stride 2, planes / 4 zero channels on each side.
  int shortcuts = 0;
  for (const auto& layer : m->layers()) {
    if (layer->type() != "SubsamplePad") continue;
    ++shortcuts;
    EXPECT_EQ(layer->output_shape(), layer->name() == "layer2.0.shortcut" ? (Shape{16, 16, 32}) : (Shape{8, 8, 64}))
        << layer->name();
  }
  EXPECT_EQ(shortcuts, 2);
  EXPECT_EQ(m->output_shape(), (Shape{10}));
}

struct TorchKeys {
  std::set<std::string> params, buffers;
  int64_t parameters = -1;
};

// torchvision's state_dict keys of `model` with 1000 classes, from tests/support/torchvision_resnet_keys.py.
// Without python3-torch and python3-torchvision the script fails, and so does the test.
TorchKeys torchvision_keys(const std::string& model) {
  const std::string cmd = "/usr/bin/python3 " + std::string(SCALETRAIN_SOURCE_DIR) +
                          "/tests/support/torchvision_resnet_keys.py " + model + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  TorchKeys keys;
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << cmd;
    return keys;
  }
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  if (status != 0) {
    ADD_FAILURE() << cmd << " failed (exit status " << status << "; needs python3-torch and python3-torchvision):\n"
                  << out;
    return keys;
  }
  std::istringstream lines(out);
  std::string kind, key;
  while (lines >> kind >> key) {
    if (kind == "param")
      keys.params.insert(key);
    else if (kind == "buffer")
      keys.buffers.insert(key);
    else if (kind == "parameters")
      keys.parameters = std::stoll(key);
    else
      ADD_FAILURE() << "unexpected line from " << cmd << ": " << kind << " " << key;
  }
  return keys;
}

// What is in `a` and not in `b`, for the failure message.
std::string missing_from(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string s;
  for (const std::string& k : a)
    if (!b.count(k)) s += " " + k;
  return s;
}

class TorchvisionNames : public ::testing::TestWithParam<std::string> {};

// Every parameter and buffer has its torchvision state_dict key (a checkpoint loads by name), and the
// counts agree.
TEST_P(TorchvisionNames, EqualTorchvisionsStateDictKeys) {
  const std::string name = GetParam();
  const TorchKeys torch = torchvision_keys(name);
  ASSERT_FALSE(torch.params.empty());
  auto m = nn::make_zoo_model(name, {224, 224, 3}, 1000);
  std::set<std::string> params, buffers;
  for (const nn::ParameterSlot& s : m->slots()) params.insert(s.name);
  for (const nn::BufferSlot& b : m->buffer_slots()) buffers.insert(b.name);
  EXPECT_EQ(params.size(), m->slots().size()) << "parameter names repeat";
  EXPECT_EQ(buffers.size(), m->buffer_slots().size()) << "buffer names repeat";
  EXPECT_EQ(params, torch.params) << "only ours:" << missing_from(params, torch.params)
                                  << "\nonly torchvision's:" << missing_from(torch.params, params);
  EXPECT_EQ(buffers, torch.buffers) << "only ours:" << missing_from(buffers, torch.buffers)
                                    << "\nonly torchvision's:" << missing_from(torch.buffers, buffers);
  EXPECT_EQ(m->parameter_count(), torch.parameters);
}

INSTANTIATE_TEST_SUITE_P(Zoo, TorchvisionNames, ::testing::Values("resnet18", "resnet50"));

// The values of the parameter named `name` after init_parameters.
std::vector<float> values_of(const nn::Model& m, const std::string& name) {
  for (const nn::ParameterSlot& s : m.slots())
    if (s.name == name) {
      const float* p = m.flat_parameters().data<float>() + s.offset;
      return std::vector<float>(p, p + s.count);
    }
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

double rms(const std::vector<float>& v) {
  double sq = 0;
  for (float x : v) sq += static_cast<double>(x) * x;
  return std::sqrt(sq / static_cast<double>(v.size()));
}

// torchvision's initialization: convolutions kaiming_normal_(mode='fan_out'), BatchNorm weight 1 and
// bias 0, fc uniform in +-1/sqrt(fan_in) for the weight and the bias.
TEST(ResnetZoo, InitializesAsTorchvision) {
  auto m = nn::make_zoo_model("resnet18", {224, 224, 3}, 1000);
  m->init_parameters(7);
  EXPECT_NEAR(rms(values_of(*m, "conv1.weight")), std::sqrt(2.0 / (64 * 7 * 7)), 0.03 * std::sqrt(2.0 / (64 * 49)));
  EXPECT_NEAR(rms(values_of(*m, "layer4.1.conv2.weight")), std::sqrt(2.0 / (512 * 9)), 0.01 * std::sqrt(2.0 / 4608));
  for (float w : values_of(*m, "layer1.0.bn1.weight")) ASSERT_EQ(w, 1.0f);
  for (float b : values_of(*m, "layer1.0.bn1.bias")) ASSERT_EQ(b, 0.0f);
  const float bound = 1.0f / std::sqrt(512.0f);
  for (const char* p : {"fc.weight", "fc.bias"}) {
    const std::vector<float> v = values_of(*m, p);
    float most = 0;
    for (float x : v) most = std::max(most, std::fabs(x));
    EXPECT_LE(most, bound) << p;
    EXPECT_GT(most, 0.9f * bound) << p;
    EXPECT_NEAR(rms(v), bound / std::sqrt(3.0), 0.1 * bound) << p;  // uniform's rms
  }
}

// A device tensor of `shape` stored as `dtype` holding `values` (exact in bf16: small integers).
Tensor device_tensor(Backend& backend, const Shape& shape, DType dtype, const std::vector<float>& values) {
  Tensor host(shape, dtype, "host");
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::f32)
      host.data<float>()[i] = values[i];
    else
      host.data<bf16>()[i] = from_float<bf16>(values[i]);
  }
  Tensor d = backend.empty(shape, dtype, "device");
  backend.copy_async(backend.compute_stream(), d, host);
  backend.synchronize();
  return d;
}

// A device tensor's values (f32 or bf16) as floats.
std::vector<float> host_values(Backend& backend, const Tensor& t) {
  Tensor h(t.shape(), t.dtype(), "host");
  backend.copy_async(backend.compute_stream(), h, t);
  backend.synchronize();
  std::vector<float> v(static_cast<size_t>(h.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.dtype() == DType::f32 ? h.data<float>()[i] : to_float(h.data<bf16>()[i]);
  return v;
}

class SubsamplePadLayer : public ::testing::TestWithParam<std::tuple<DeviceKind, DType>> {
 protected:
  // Runs the layer's forward on x and backward on dy; returns y and dx.
  std::pair<std::vector<float>, std::vector<float>> run(nn::SubsamplePad& layer, const Shape& in, int64_t batch,
                                                        const std::vector<float>& x, const std::vector<float>& dy) {
    const auto [kind, dtype] = GetParam();
    auto backend = backend_of(kind);
    const Shape out = layer.configure(in);
    layer.attach(*backend, dtype);
    layer.build(*backend, batch);
    const Tensor xd = device_tensor(*backend, nn::with_batch(batch, in), dtype, x);
    const Tensor dyd = device_tensor(*backend, nn::with_batch(batch, out), dtype, dy);
    const std::vector<float> y = host_values(*backend, layer.forward(xd, true));
    const std::vector<float> dx = host_values(*backend, layer.backward(dyd, true));
    return {y, dx};
  }
};

// Two 3x3 images of one channel: rows and columns 0 and 2 kept, one zero channel on each side.
TEST_P(SubsamplePadLayer, KeepsEveryOtherPositionAndPadsTheChannels) {
  nn::SubsamplePad layer("shortcut", 2, 1, 1);
  EXPECT_EQ(layer.configure({3, 3, 1}), (Shape{2, 2, 3}));
  std::vector<float> x, dy;
  for (int i = 1; i <= 18; ++i) x.push_back(static_cast<float>(i));
  for (int i = 1; i <= 24; ++i) dy.push_back(static_cast<float>(i));
  const auto [y, dx] = run(layer, {3, 3, 1}, 2, x, dy);
  EXPECT_EQ(y, (std::vector<float>{0, 1,  0, 0, 3,  0, 0, 7,  0, 0, 9,  0,  //
                                   0, 10, 0, 0, 12, 0, 0, 16, 0, 0, 18, 0}));
  EXPECT_EQ(dx, (std::vector<float>{2, 0, 5, 0, 0, 0, 8, 0, 11,  //
                                    14, 0, 17, 0, 0, 0, 20, 0, 23}));
}

// Two channels, one zero channel before them and two after; the gradient of the padding is dropped.
TEST_P(SubsamplePadLayer, PadsBeforeAndAfterApart) {
  nn::SubsamplePad layer("shortcut", 2, 1, 2);
  const auto [y, dx] = run(layer, {2, 2, 2}, 1, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5});
  EXPECT_EQ(y, (std::vector<float>{0, 1, 2, 0, 0}));
  EXPECT_EQ(dx, (std::vector<float>{2, 3, 0, 0, 0, 0, 0, 0}));
}

INSTANTIATE_TEST_SUITE_P(Backends, SubsamplePadLayer,
                         ::testing::Combine(::testing::Values(DeviceKind::cpu, DeviceKind::sim),
                                            ::testing::Values(DType::f32, DType::bf16)),
                         [](const auto& info) {
                           return device_kind_name(std::get<0>(info.param)) + "_" +
                                  std::string(dtype_name(std::get<1>(info.param)));
                         });

TEST(SubsamplePadChecks, NamesTheLayer) {
  nn::SubsamplePad flat("layer2.0.shortcut", 2, 8, 8);
  try {
    flat.configure({16});
    ADD_FAILURE() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("layer2.0.shortcut"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expects [H, W, C] input per sample, got [16]"), std::string::npos)
        << e.what();
  }
}

// One training step of resnet20 on the cpu: the option-A shortcuts, BatchNorm and the residual sums run
// forward and backward, and the logits and gradients are finite.
TEST(ResnetZoo, Resnet20RunsForwardAndBackward) {
  auto backend = make_cpu_backend();
  auto m = nn::make_zoo_model("resnet20", {32, 32, 3}, 10);
  m->build(*backend, 2);
  m->init_parameters(3);
  std::vector<float> x(2 * 32 * 32 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 13) / 13.0f - 0.5f;
  const Tensor input = device_tensor(*backend, {2, 32, 32, 3}, DType::f32, x);
  const std::vector<float> logits = host_values(*backend, m->forward(input, true));
  ASSERT_EQ(logits.size(), 20u);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  std::vector<float> ones(20, 0.05f);
  m->backward(device_tensor(*backend, {2, 10}, DType::f32, ones));
  const std::vector<float> grads = host_values(*backend, m->flat_gradients());
  double sq = 0;
  for (float g : grads) {
    ASSERT_TRUE(std::isfinite(g));
    sq += static_cast<double>(g) * g;
  }
  EXPECT_GT(sq, 0.0);
}

}  // namespace
