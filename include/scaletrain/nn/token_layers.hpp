// Layers over token tensors [T, C] per sample (the Vision Transformer's): Reshape (a zero-copy view of
// a sample under another shape of as many elements: the patch grid [h, w, C] as h * w tokens, in the
// order of torchvision's flatten(2).transpose(1, 2)), ClassToken (a learned token put first along the
// token axis), PositionEmbedding (a learned [1, T, C] added to every sample) and SelectToken (one
// token's channels, the class token before the head). ClassToken's and PositionEmbedding's parameter
// is an attribute of a module, not a submodule's: the node's name is the parameter's full name
// (class_token, encoder.pos_embedding), its last part the parameter's own.
#pragma once
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

class Reshape : public Layer {
 public:
  Reshape(std::string name, Shape shape) : Layer(std::move(name)), target_(std::move(shape)) {}
  std::string type() const override { return "Reshape"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override { batch_ = batch; }
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;

 private:
  Shape target_;
  int64_t batch_ = 0;
  Tensor y_, dx_;
};

// A layer whose one parameter is named by its node (see above).
class NodeNamedParameterLayer : public Layer {
 public:
  using Layer::Layer;
  std::string parameter_scope() const override;

 protected:
  std::string parameter_name() const;  // the node name's last part
};

class ClassToken : public NodeNamedParameterLayer {
 public:
  using NodeNamedParameterLayer::NodeNamedParameterLayer;
  std::string type() const override { return "ClassToken"; }
  Shape configure(const Shape& in) override;  // [T, C] -> [T + 1, C]
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;

 private:
  int64_t tokens_ = 0, channels_ = 0;
  kernels::ColumnSumsPlan grad_plan_;
  Tensor y_, dx_, partial_;
};

class PositionEmbedding : public NodeNamedParameterLayer {
 public:
  using NodeNamedParameterLayer::NodeNamedParameterLayer;
  std::string type() const override { return "PositionEmbedding"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  // The input's gradient is dy itself.
  const Tensor& backward(const Tensor& dy, bool need_dx) override;

 private:
  kernels::ColumnSumsPlan grad_plan_;
  Tensor y_, partial_;
};

class SelectToken : public Layer {
 public:
  SelectToken(std::string name, int64_t index) : Layer(std::move(name)), index_(index) {}
  std::string type() const override { return "SelectToken"; }
  Shape configure(const Shape& in) override;  // [T, C] -> [C]
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;

 private:
  int64_t index_;
  Tensor y_, dx_;
};

}  // namespace scaletrain::nn
