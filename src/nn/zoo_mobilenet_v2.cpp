// torchvision 0.14's MobileNetV2 (width 1.0): a 3x3 stride-2 stem of 32, seventeen inverted residual
// blocks (a 1x1 expansion, a depthwise 3x3 of the block's stride, a linear 1x1 projection; the input
// added back where the shape stays), a 1x1 convolution to 1280, global average pooling, Dropout 0.2
// and the classifier. Convolutions carry no bias and are followed by BatchNorm and (but the
// projections) ReLU6. Nodes carry torchvision's module names (features.<i>..., classifier.1), so the
// parameters and buffers are its state_dict keys. 3,504,872 parameters at 224x224x3, 1000 classes.
// model.stem_stride 1 keeps 28x28 images from ending on 1x1 grids (the Fashion-MNIST recipe).
#include <array>

#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/zoo_networks.hpp"

namespace scaletrain::nn {
namespace {

// torchvision's Conv2dNormActivation as nodes <name>.0 (convolution), <name>.1 (BatchNorm) and, with
// relu6, <name>.2 (ReLU6); padding (kernel - 1) / 2; He-normal (fan_out) weights, as torchvision's.
std::string mobilenet_conv(Model& m, const std::string& x, const std::string& name, int64_t filters, int64_t kernel,
                           int64_t stride, int64_t groups, bool relu6) {
  std::string h = m.node<Conv2D>(
      {x}, name + ".0",
      Conv2DOptions{filters, kernel, stride, Padding::symmetric((kernel - 1) / 2), groups, false, Activation::none},
      Init::he_normal_fan_out);
  h = m.node<BatchNorm2d>({h}, name + ".1");
  return relu6 ? m.node<ActivationLayer>({h}, name + ".2", Activation::relu6) : h;
}

// InvertedResidual features.<index>: conv.0 the 1x1 expansion to in * expand (not for expand 1),
// then the depthwise 3x3 ConvNormActivation, the 1x1 projection and its BatchNorm, numbered on.
std::string inverted_residual(Model& m, const std::string& x, int index, int64_t in, int64_t out, int64_t stride,
                              int64_t expand) {
  const std::string block = "features." + std::to_string(index) + ".conv.";
  const int64_t hidden = in * expand;
  int part = 0;
  std::string h = x;
  if (expand != 1) h = mobilenet_conv(m, h, block + std::to_string(part++), hidden, 1, 1, 1, true);
  h = mobilenet_conv(m, h, block + std::to_string(part++), hidden, 3, stride, hidden, true);
  h = m.node<Conv2D>({h}, block + std::to_string(part++),
                     Conv2DOptions{out, 1, 1, Padding::symmetric(0), 1, false, Activation::none},
                     Init::he_normal_fan_out);
  h = m.node<BatchNorm2d>({h}, block + std::to_string(part));
  if (stride != 1 || in != out) return h;
  return m.node<Add>({x, h}, "features." + std::to_string(index) + ".add");
}

struct InvertedResidualStage {
  int64_t expand, channels, blocks, stride;
};

}  // namespace

void build_mobilenet_v2(Model& m, const ZooOptions& o) {
  constexpr std::array<InvertedResidualStage, 7> stages{
      {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}}};
  std::string x = mobilenet_conv(m, Model::input(), "features.0", 32, 3, o.stem_stride_or(2), 1, true);
  int64_t in = 32;
  int index = 1;
  for (const InvertedResidualStage& s : stages)
    for (int64_t b = 0; b < s.blocks; ++b) {
      x = inverted_residual(m, x, index++, in, s.channels, b == 0 ? s.stride : 1, s.expand);
      in = s.channels;
    }
  x = mobilenet_conv(m, x, "features." + std::to_string(index), 1280, 1, 1, 1, true);
  x = m.node<GlobalAvgPool>({x}, "avgpool");
  x = m.node<Dropout>({x}, "classifier.0", o.dropout_or(0.2f));
  m.node<Dense>({x}, "classifier.1", o.classes, Activation::none, true, Init::normal_001);
}

}  // namespace scaletrain::nn
