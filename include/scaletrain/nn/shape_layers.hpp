// Flatten: [H, W, C] -> [H*W*C] in channels-last order (Keras' order), without a copy; Identity:
// its input as it is (nn.Identity, a shortcut that changes nothing).
#pragma once
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

class Flatten : public Layer {
 public:
  explicit Flatten(std::string name) : Layer(std::move(name)) {}
  std::string type() const override { return "Flatten"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override { batch_ = batch; }
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;

 private:
  int64_t batch_ = 0;
  Tensor y_, dx_;
};

class Identity : public Layer {
 public:
  explicit Identity(std::string name) : Layer(std::move(name)) {}
  std::string type() const override { return "Identity"; }
  Shape configure(const Shape& in) override { return in_shape_ = out_shape_ = in; }
  void build(Backend& backend, int64_t batch) override {}
  const Tensor& forward(const Tensor& x, bool training) override { return x; }
  const Tensor& backward(const Tensor& dy, bool need_dx) override { return need_dx ? dy : no_gradient(); }
};

}  // namespace scaletrain::nn
