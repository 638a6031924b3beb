// Model::backward: no gradient flows into the input, so the first layer with parameters computes no
// dx and the layers before it (mlp's Flatten) run no backward; every layer is still reported done,
// in reverse order, so that the gradient buckets see all of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/model.hpp"
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

}  // namespace
