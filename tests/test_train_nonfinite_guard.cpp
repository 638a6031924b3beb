// The non-finite guard's parts (train/nonfinite_guard.hpp): the first layer with inf/NaN gradients
// is found counting from the output in LeNet's real flat-gradient layout, from the device's verdict
// of the step as the host reads it back (train/device_step_state.hpp), and the stop message gives
// the step, the learning rate, that layer and the hint. The guard in training runs
// (stop, skip, a learning rate driven to NaN) is tested in mpitest_train_step_agreement.cpp and
// tests/signals.cmake.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/train/device_step_state.hpp"
#include "scaletrain/train/nonfinite_guard.hpp"
#include "support/test_harness.hpp"

namespace scaletrain::train {
namespace {

class FirstNonFinite : public ::testing::Test {
 protected:
  void SetUp() override {
    BackendOptions o;
    o.threads = 1;
    backend = make_backend(o);
    model = nn::make_zoo_model("lenet", {28, 28, 1}, 10);
    model->build(*backend, 4, DType::f32);
    grads.assign(static_cast<size_t>(model->flat_gradients().numel()), 0.5f);
  }
  // Puts `n` non-finite values into parameter `index` of layer `layer`.
  void spoil(size_t layer, size_t index, int64_t n) {
    const nn::ParameterSlot& s = model->slots()[model->first_slot(layer) + index];
    for (int64_t k = 0; k < n; ++k)
      grads[static_cast<size_t>(s.offset + k)] = k % 2 ? std::numeric_limits<float>::infinity() : std::nanf("");
  }
  // The step's verdict of `grads` on the device, read back: the count of each parameter slot.
  std::vector<double> slot_counts() {
    std::vector<std::pair<int64_t, int64_t>> tensors;
    for (const nn::ParameterSlot& s : model->slots()) tensors.emplace_back(s.offset, s.count);
    DeviceStepState state(*backend, tensors, kernels::StepRules{}, 0, 1);
    Tensor g = backend->empty({static_cast<int64_t>(grads.size())}, DType::f32, "grads");
    backend->upload(g, grads);
    const Tensor losses = backend->zeros({4}, DType::f32, "losses");
    state.verdict(g, losses, false);
    state.decide(0, 0);
    const std::vector<StepOutcome> read = state.completed(true);
    EXPECT_EQ(read.size(), 1u);
    return read.empty() ? std::vector<double>(model->slots().size()) : state.counts_by_tensor(read.front());
  }
  std::unique_ptr<Backend> backend;
  std::unique_ptr<nn::Model> model;
  std::vector<float> grads;
};

TEST_F(FirstNonFinite, FiniteGradientsHaveNone) { EXPECT_FALSE(first_nonfinite_gradient(*model, slot_counts())); }

TEST_F(FirstNonFinite, TheLayerNearestTheOutputComesFirst) {
  const size_t first_conv = 0, last_dense = model->layers().size() - 1;
  spoil(first_conv, 0, 3);
  spoil(last_dense, 1, 2);  // its bias
  const auto f = first_nonfinite_gradient(*model, slot_counts());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->layer, model->layers()[last_dense]->name());
  EXPECT_EQ(f->parameter, "bias");
  EXPECT_EQ(f->nonfinite, 2);
  EXPECT_EQ(f->count, 10);
  EXPECT_EQ(f->layers_affected, 2);
}

TEST_F(FirstNonFinite, TheMessageNamesStepRateLayerAndHint) {
  spoil(0, 0, 150);  // all 150 weights of the first conv
  NonFiniteStep s;
  s.step = 17;
  s.epoch = 1;
  s.lr = 1e6;
  s.loss_rank = 2;
  s.gradients = true;
  s.precision = "bf16";
  const std::string m = nonfinite_stop_message(s, first_nonfinite_gradient(*model, slot_counts()));
  for (const char* want : {"inf/NaN at step 17 (epoch 2, learning rate 1e+06, bf16)", "the loss of rank 2 is inf/NaN",
                           "counting from the output, is conv2d (conv2d.weight: 150 of 150 values)",
                           "1 layer(s) have inf/NaN gradients", "optimizer.lr", "normalized",
                           "train.on_nonfinite = skip"})
    EXPECT_NE(m.find(want), std::string::npos) << "no '" << want << "' in: " << m;
}

TEST(NonFinitePolicy, ParsesItsNamesAndRejectsOthersNamingTheKey) {
  EXPECT_EQ(parse_nonfinite_policy("stop"), NonFinitePolicy::stop);
  EXPECT_EQ(parse_nonfinite_policy("skip"), NonFinitePolicy::skip);
  EXPECT_EQ(nonfinite_policy_name(NonFinitePolicy::skip), "skip");
  const std::string e = testing::error_of([] { parse_nonfinite_policy("ignore"); });
  EXPECT_NE(e.find("train.on_nonfinite must be stop or skip, got 'ignore'"), std::string::npos) << e;
}

}  // namespace
}  // namespace scaletrain::train
