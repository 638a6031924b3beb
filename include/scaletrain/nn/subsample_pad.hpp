// SubsamplePad: the option-A (parameter-free) shortcut of He et al.'s CIFAR ResNets, as the LambdaLayer
// of akamaster/pytorch_resnet_cifar10: every stride-th row and column (x[:, ::s, ::s, :] of NHWC), with
// pad_before zero channels before the input's and pad_after after them.
#pragma once
#include "scaletrain/kernels/subsample_pad.hpp"
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

class SubsamplePad : public Layer {
 public:
  // [H, W, C] -> [ceil(H / stride), ceil(W / stride), pad_before + C + pad_after].
  SubsamplePad(std::string name, int64_t stride, int64_t pad_before, int64_t pad_after);
  std::string type() const override { return "SubsamplePad"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  // dx: dy's channels of the input at the positions forward kept, 0 elsewhere.
  const Tensor& backward(const Tensor& dy, bool need_dx) override;

 private:
  int64_t stride_, pad_before_, pad_after_;
  kernels::SubsamplePadGeometry g_{};
  Tensor y_, dx_;
};

}  // namespace scaletrain::nn
