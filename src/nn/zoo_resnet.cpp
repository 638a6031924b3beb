// The zoo's ResNets with BatchNorm: resnet20 (He et al.'s CIFAR network, option-A shortcuts,
// akamaster's names), resnet18 and resnet50 (torchvision's, parameters and buffers named as its
// state_dict keys).
#include <array>

#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/subsample_pad.hpp"
#include "scaletrain/nn/zoo_networks.hpp"

namespace scaletrain::nn {
namespace {

// The ResNets' convolution: no bias, PyTorch's explicit padding, He-normal weights (fan_out).
std::string resnet_conv(Model& m, const std::string& x, const std::string& name, int64_t filters, int64_t kernel,
                        int64_t stride, int64_t padding) {
  return m.node<Conv2D>({x}, name,
                        Conv2DOptions{filters, kernel, stride, Padding::symmetric(padding), 1, false, Activation::none},
                        Init::he_normal_fan_out);
}

// The end of a residual block: relu(h + shortcut), as nodes <block>.add and <block>.relu.
std::string residual_sum(Model& m, const std::string& h, const std::string& shortcut, const std::string& block) {
  const std::string sum = m.node<Add>({h, shortcut}, block + ".add");
  return m.node<ActivationLayer>({sum}, block + ".relu", Activation::relu);
}

// How a BasicBlock that changes the shape gets its shortcut: option A (akamaster's CIFAR ResNets:
// subsampling and zero channels, no parameters) or option B (torchvision: downsample.0, a 1x1
// convolution of the block's stride, and downsample.1, a BatchNorm2d).
enum class Shortcut { option_a, option_b };

// A BasicBlock of `planes` channels: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), conv1 3x3 of
// the block's stride, conv2 3x3. The shortcut is x itself where the shape stays.
std::string basic_block(Model& m, const std::string& x, const std::string& block, int64_t in_planes, int64_t planes,
                        int64_t stride, Shortcut shortcut) {
  std::string h = resnet_conv(m, x, block + ".conv1", planes, 3, stride, 1);
  h = m.node<BatchNorm2d>({h}, block + ".bn1", Activation::relu);
  h = resnet_conv(m, h, block + ".conv2", planes, 3, 1, 1);
  h = m.node<BatchNorm2d>({h}, block + ".bn2");
  std::string identity = x;
  if (stride != 1 || in_planes != planes) {
    if (shortcut == Shortcut::option_a) {
      identity = m.node<SubsamplePad>({x}, block + ".shortcut", stride, planes / 4, planes / 4);
    } else {
      identity = resnet_conv(m, x, block + ".downsample.0", planes, 1, stride, 0);
      identity = m.node<BatchNorm2d>({identity}, block + ".downsample.1");
    }
  }
  return residual_sum(m, h, identity, block);
}

// torchvision's Bottleneck (ResNet v1.5, the stride on the 3x3): conv1 1x1 `planes`, bn1 relu, conv2 3x3
// of the block's stride, bn2 relu, conv3 1x1 4 x planes, bn3, plus the shortcut (downsample.0/1 where the
// shape changes), relu.
std::string bottleneck(Model& m, const std::string& x, const std::string& block, int64_t in_planes, int64_t planes,
                       int64_t stride) {
  std::string h = resnet_conv(m, x, block + ".conv1", planes, 1, 1, 0);
  h = m.node<BatchNorm2d>({h}, block + ".bn1", Activation::relu);
  h = resnet_conv(m, h, block + ".conv2", planes, 3, stride, 1);
  h = m.node<BatchNorm2d>({h}, block + ".bn2", Activation::relu);
  h = resnet_conv(m, h, block + ".conv3", 4 * planes, 1, 1, 0);
  h = m.node<BatchNorm2d>({h}, block + ".bn3");
  std::string identity = x;
  if (stride != 1 || in_planes != 4 * planes) {
    identity = resnet_conv(m, x, block + ".downsample.0", 4 * planes, 1, stride, 0);
    identity = m.node<BatchNorm2d>({identity}, block + ".downsample.1");
  }
  return residual_sum(m, h, identity, block);
}

// torchvision 0.14's ResNet-18 (bottleneck false, blocks {2, 2, 2, 2}) and ResNet-50 (true, {3, 4, 6, 3}):
// conv1 7x7 64 stride 2, bn1 relu, maxpool 3x3 stride 2 padding 1, layer1..layer4 of 64, 128, 256 and
// 512 planes (stride 2 from layer2 on), avgpool (global), fc. Node names are torchvision's module names,
// so parameter and buffer names are its state_dict keys.
void build_torchvision_resnet(Model& m, int64_t classes, bool bottleneck_blocks, const std::array<int, 4>& blocks) {
  std::string x = resnet_conv(m, Model::input(), "conv1", 64, 7, 2, 3);
  x = m.node<BatchNorm2d>({x}, "bn1", Activation::relu);
  x = m.node<MaxPool2D>({x}, "maxpool", 3, 2, Padding::symmetric(1));
  int64_t in_planes = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int b = 0; b < blocks[static_cast<size_t>(stage)]; ++b) {
      const int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      const std::string block = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      if (bottleneck_blocks) {
        x = bottleneck(m, x, block, in_planes, planes, stride);
        in_planes = 4 * planes;
      } else {
        x = basic_block(m, x, block, in_planes, planes, stride, Shortcut::option_b);
        in_planes = planes;
      }
    }
  }
  x = m.node<GlobalAvgPool>({x}, "avgpool");
  m.node<Dense>({x}, "fc", classes, Activation::none, true, Init::pytorch_default);
}

}  // namespace

// He et al. 2016's CIFAR ResNet-20 with option-A shortcuts, named as akamaster/pytorch_resnet_cifar10's
// resnet20(): conv1 3x3 16, bn1 relu, layer1..layer3 of three BasicBlocks of 16, 32 and 64 channels
// (the first block of layer2 and layer3 of stride 2), global average pooling, linear. 269,722
// parameters on 32x32x3 with 10 classes. Initialized as the torchvision ResNets below (akamaster's draws
// its convolutions and linear with kaiming_normal_ of the fan-in instead).
void build_resnet20(Model& m, const ZooOptions& o) {
  const int64_t classes = o.classes;
  std::string x = resnet_conv(m, Model::input(), "conv1", 16, 3, 1, 1);
  x = m.node<BatchNorm2d>({x}, "bn1", Activation::relu);
  int64_t in_planes = 16;
  for (int stage = 0; stage < 3; ++stage) {
    const int64_t planes = int64_t{16} << stage;
    for (int b = 0; b < 3; ++b) {
      const int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      const std::string block = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      x = basic_block(m, x, block, in_planes, planes, stride, Shortcut::option_a);
      in_planes = planes;
    }
  }
  x = m.node<GlobalAvgPool>({x}, "avgpool");
  m.node<Dense>({x}, "linear", classes, Activation::none, true, Init::pytorch_default);
}

void build_resnet18(Model& m, const ZooOptions& o) { build_torchvision_resnet(m, o.classes, false, {2, 2, 2, 2}); }
void build_resnet50(Model& m, const ZooOptions& o) { build_torchvision_resnet(m, o.classes, true, {3, 4, 6, 3}); }

}  // namespace scaletrain::nn
