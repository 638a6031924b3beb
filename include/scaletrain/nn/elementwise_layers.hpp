// Stand-alone element-wise layers: ReLU, ReLU6, SELU and Dropout (inverted, counter-based random mask).
#pragma once
#include "scaletrain/nn/activation.hpp"
#include "scaletrain/nn/layer.hpp"
#include "scaletrain/nn/random_keys.hpp"

namespace scaletrain::nn {

class ActivationLayer : public Layer {
 public:
  ActivationLayer(std::string name, Activation a) : Layer(std::move(name)), act_(a) {}
  std::string type() const override;
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  // The layer before applies this ReLU (Model::fuse_residual_tails): forward hands its input on, and
  // backward the gradient, which that layer masks.
  void absorb_into_producer() { absorbed_ = true; }
  bool absorbed() const { return absorbed_; }
  Activation activation() const { return act_; }

 private:
  Activation act_;
  bool absorbed_ = false;
  Tensor x_, y_, dx_;
};

class Dropout : public Layer {
 public:
  Dropout(std::string name, float rate);
  std::string type() const override { return "Dropout"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  void set_random_state(uint64_t seed, const double* step, const Tensor& sample_index) override;

 private:
  float rate_;
  RandomKeys keys_;  // what the mask is keyed on
  bool last_training_ = false;
  Tensor y_, mask_, dx_;
};

}  // namespace scaletrain::nn
