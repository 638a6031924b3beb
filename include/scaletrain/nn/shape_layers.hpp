// Flatten: [H, W, C] -> [H*W*C] in channels-last order (Keras' order), without a copy.
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

}  // namespace scaletrain::nn
