// Model zoo definitions: chains (as Keras' Sequential), small graphs and the ResNets (the functional builder).
#include "scaletrain/nn/zoo.hpp"

#include <array>

#include "scaletrain/core/join.hpp"
#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/subsample_pad.hpp"

namespace scaletrain::nn {
namespace {

// Flatten -> 256 ReLU -> 128 ReLU -> classes.
void build_mlp(Model& m, int64_t classes) {
  m.emplace<Flatten>("");
  m.emplace<Dense>("", 256, Activation::relu);
  m.emplace<Dense>("", 128, Activation::relu);
  m.emplace<Dense>("", classes);
}

// LeNet-5 for 28x28 input: conv 5x5 'same' 6, pool, conv 5x5 'valid' 16, pool, 120, 84, classes;
// with `dropout` > 0, Dropout of that rate after the 120- and 84-unit layers (lenet_dropout, for the
// tests of rank-independent dropout).
void build_lenet(Model& m, int64_t classes, float dropout = 0.0f) {
  m.emplace<Conv2D>("", Conv2DOptions{6, 5, 1, Padding::same, 1, true, Activation::relu});
  m.emplace<MaxPool2D>("", 2);
  m.emplace<Conv2D>("", Conv2DOptions{16, 5, 1, Padding::valid, 1, true, Activation::relu});
  m.emplace<MaxPool2D>("", 2);
  m.emplace<Flatten>("");
  for (int64_t units : {120, 84}) {
    m.emplace<Dense>("", units, Activation::relu);
    if (dropout > 0.0f) m.emplace<Dropout>("", dropout);
  }
  m.emplace<Dense>("", classes);
}

// A residual MLP: Flatten, Dense 64 ReLU (stem), two blocks x = relu(x + fc2(relu(fc1(x)))) of 64
// units, Dense classes (head). Parameters named as a torch module with stem, blocks.i.fc1/fc2, head.
void build_resmlp(Model& m, int64_t classes) {
  std::string x = m.node<Flatten>({Model::input()}, "flatten");
  x = m.node<Dense>({x}, "stem", 64, Activation::relu);
  for (int b = 0; b < 2; ++b) {
    const std::string block = "blocks." + std::to_string(b);
    std::string h = m.node<Dense>({x}, block + ".fc1", 64, Activation::relu);
    h = m.node<Dense>({h}, block + ".fc2", 64);
    x = m.node<Add>({x, h}, block + ".add");
    x = m.node<ActivationLayer>({x}, block + ".relu", Activation::relu);
  }
  m.node<Dense>({x}, "head", classes);
}

// A small convolutional network with a two-branch Concat and a residual Add: stem 3x3 16 ReLU;
// branch_a 1x1 8 ReLU and branch_b 3x3 8 ReLU on the stem, concatenated (16) and added to the stem;
// 2x2 max-pooling; conv 3x3 32 ReLU; 2x2 max-pooling; Flatten; Dense classes (head).
void build_branchnet(Model& m, int64_t classes) {
  const auto conv = [](int64_t filters, int64_t kernel) {
    return Conv2DOptions{filters, kernel, 1, Padding::same, 1, true, Activation::relu};
  };
  const std::string stem = m.node<Conv2D>({Model::input()}, "stem", conv(16, 3));
  const std::string a = m.node<Conv2D>({stem}, "branch_a", conv(8, 1));
  const std::string b = m.node<Conv2D>({stem}, "branch_b", conv(8, 3));
  const std::string cat = m.node<Concat>({a, b}, "cat");
  std::string x = m.node<Add>({stem, cat}, "add");
  x = m.node<MaxPool2D>({x}, "pool1", 2);
  x = m.node<Conv2D>({x}, "conv2", conv(32, 3));
  x = m.node<MaxPool2D>({x}, "pool2", 2);
  x = m.node<Flatten>({x}, "flatten");
  m.node<Dense>({x}, "head", classes);
}

// The Keras network of TensorFlow's Fashion-MNIST multi-worker example: pairs of 3x3 'same'
// convolutions of 128, 256 and 512 filters (the first of the first pair a Conv2D, the other five
// SeparableConv2D), SELU, 2x2 max-pooling after each pair, Dense 512 SELU, Dense classes.
// 2,887,306 parameters on 28x28x1 with 10 classes, as Keras' summary reports.
void build_fmnist_sepcnn(Model& m, int64_t classes) {
  m.emplace<Conv2D>("", Conv2DOptions{128, 3, 1, Padding::same, 1, true, Activation::selu});
  m.emplace<SeparableConv2D>("", 128, 3, 1, Padding::same, Activation::selu);
  m.emplace<MaxPool2D>("", 2);
  m.emplace<SeparableConv2D>("", 256, 3, 1, Padding::same, Activation::selu);
  m.emplace<SeparableConv2D>("", 256, 3, 1, Padding::same, Activation::selu);
  m.emplace<MaxPool2D>("", 2);
  m.emplace<SeparableConv2D>("", 512, 3, 1, Padding::same, Activation::selu);
  m.emplace<SeparableConv2D>("", 512, 3, 1, Padding::same, Activation::selu);
  m.emplace<MaxPool2D>("", 2);
  m.emplace<Flatten>("");
  m.emplace<Dense>("", 512, Activation::selu);
  m.emplace<Dense>("", classes);
}

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

// He et al. 2016's CIFAR ResNet-20 with option-A shortcuts, named as akamaster/pytorch_resnet_cifar10's
// resnet20(): conv1 3x3 16, bn1 relu, layer1..layer3 of three BasicBlocks of 16, 32 and 64 channels
// (the first block of layer2 and layer3 of stride 2), global average pooling, linear. 269,722
// parameters on 32x32x3 with 10 classes. Initialized as the torchvision ResNets below (akamaster's draws
// its convolutions and linear with kaiming_normal_ of the fan-in instead).
void build_resnet20(Model& m, int64_t classes) {
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

std::vector<std::string> zoo_model_names() {
  return {"mlp", "lenet", "lenet_dropout", "fmnist_sepcnn", "resmlp", "branchnet", "resnet20", "resnet18", "resnet50"};
}

std::unique_ptr<Model> make_zoo_model(const std::string& name, const Shape& input_sample, int64_t num_classes) {
  ST_CHECK(num_classes >= 2, "model '", name, "' needs at least 2 classes, got ", num_classes);
  const bool graph =
      name == "resmlp" || name == "branchnet" || name == "resnet20" || name == "resnet18" || name == "resnet50";
  auto m = std::make_unique<Model>(name, graph ? ParameterNaming::node : ParameterNaming::sequential);
  if (name == "mlp") build_mlp(*m, num_classes);
  else if (name == "lenet") build_lenet(*m, num_classes);
  else if (name == "lenet_dropout") build_lenet(*m, num_classes, 0.25f);
  else if (name == "fmnist_sepcnn") build_fmnist_sepcnn(*m, num_classes);
  else if (name == "resmlp") build_resmlp(*m, num_classes);
  else if (name == "branchnet") build_branchnet(*m, num_classes);
  else if (name == "resnet20") build_resnet20(*m, num_classes);
  else if (name == "resnet18") build_torchvision_resnet(*m, num_classes, false, {2, 2, 2, 2});
  else if (name == "resnet50") build_torchvision_resnet(*m, num_classes, true, {3, 4, 6, 3});
  else
    ST_USER_FAIL("unknown model '", name, "' (the zoo has: ", join(zoo_model_names()), ")");
  m->configure(input_sample);
  return m;
}

}  // namespace scaletrain::nn
