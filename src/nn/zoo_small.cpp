// The zoo's small networks: the chains mlp, lenet, lenet_dropout and fmnist_sepcnn (as Keras'
// Sequential) and the test graphs resmlp and branchnet (the functional builder).
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/zoo_networks.hpp"

namespace scaletrain::nn {

// Flatten -> 256 ReLU -> 128 ReLU -> classes.
void build_mlp(Model& m, const ZooOptions& o) {
  const int64_t classes = o.classes;
  m.emplace<Flatten>("");
  m.emplace<Dense>("", 256, Activation::relu);
  m.emplace<Dense>("", 128, Activation::relu);
  m.emplace<Dense>("", classes);
}

namespace {

// LeNet-5 for 28x28 input: conv 5x5 'same' 6, pool, conv 5x5 'valid' 16, pool, 120, 84, classes;
// with `dropout` > 0, Dropout of that rate after the 120- and 84-unit layers (lenet_dropout, for the
// tests of rank-independent dropout).
void build_lenet_with(Model& m, int64_t classes, float dropout) {
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

}  // namespace

void build_lenet(Model& m, const ZooOptions& o) { build_lenet_with(m, o.classes, 0.0f); }
void build_lenet_dropout(Model& m, const ZooOptions& o) { build_lenet_with(m, o.classes, 0.25f); }

// A residual MLP: Flatten, Dense 64 ReLU (stem), two blocks x = relu(x + fc2(relu(fc1(x)))) of 64
// units, Dense classes (head). Parameters named as a torch module with stem, blocks.i.fc1/fc2, head.
void build_resmlp(Model& m, const ZooOptions& o) {
  const int64_t classes = o.classes;
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
void build_branchnet(Model& m, const ZooOptions& o) {
  const int64_t classes = o.classes;
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
void build_fmnist_sepcnn(Model& m, const ZooOptions& o) {
  const int64_t classes = o.classes;
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

}  // namespace scaletrain::nn
