// Test support: a layer with buffers and no parameters, standing in for BatchNorm's running
// statistics: an f32 "running_mean" per feature (initially `initial`) and an i64
// "num_batches_tracked". It passes its input on unchanged.
#pragma once
#include <string>

#include "scaletrain/nn/layer.hpp"

namespace scaletrain::testing {

class TrackingLayer : public nn::Layer {
 public:
  explicit TrackingLayer(std::string name, double initial = 0.0) : Layer(std::move(name)), initial_(initial) {}
  std::string type() const override { return "Tracking"; }
  Shape configure(const Shape& in) override {
    declare_buffer("running_mean", in, DType::f32, initial_);
    declare_buffer("num_batches_tracked", {}, DType::i64, 0);
    return in_shape_ = out_shape_ = in;
  }
  void build(Backend&, int64_t) override {}
  const Tensor& forward(const Tensor& x, bool) override { return x; }
  const Tensor& backward(const Tensor& dy, bool need_dx) override { return need_dx ? dy : nn::no_gradient(); }

 private:
  double initial_;
};

}  // namespace scaletrain::testing
