// torchvision 0.14's VGG16 (configuration D, no BatchNorm): thirteen 3x3 convolutions with bias and
// ReLU in five stages of 64, 128, 256, 512 and 512 channels, each stage ending in 2x2 max pooling;
// adaptive average pooling to 7x7; a classifier of two hidden layers (4096 units, ReLU, Dropout 0.5)
// and the output layer. The Flatten before the classifier runs in our HWC order; the PyTorch twin
// permutes the first classifier layer's columns into torch's CHW order (nn/torch_twin.hpp), so its
// state_dict takes ours as it is. Nodes carry torchvision's module indices (features.<i>,
// classifier.<i>); the ReLUs run inside the convolutions and dense layers. 138,357,544 parameters at
// 224x224x3, 1000 classes; model.classifier_width narrows the hidden layers (the tests' reduced form).
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/zoo_networks.hpp"

namespace scaletrain::nn {

void build_vgg16(Model& m, const ZooOptions& o) {
  constexpr int64_t kPool = 0;  // a max pooling in the configuration
  constexpr int64_t config[] = {64,    64,  kPool, 128, 128,   kPool, 256, 256, 256,
                                kPool, 512, 512,   512, kPool, 512,   512, 512, kPool};
  std::string x = Model::input();
  int index = 0;  // torchvision's features index: a convolution and its ReLU take two
  for (int64_t c : config) {
    const std::string name = "features." + std::to_string(index);
    if (c == kPool) {
      x = m.node<MaxPool2D>({x}, name, 2, 2);
      index += 1;
    } else {
      x = m.node<Conv2D>({x}, name, Conv2DOptions{c, 3, 1, Padding::symmetric(1), 1, true, Activation::relu},
                         Init::he_normal_fan_out);
      index += 2;
    }
  }
  x = m.node<AdaptiveAvgPool2D>({x}, "avgpool", 7, 7);
  x = m.node<Flatten>({x}, "flatten");
  const int64_t width = o.classifier_width > 0 ? o.classifier_width : 4096;
  x = m.node<Dense>({x}, "classifier.0", width, Activation::relu, true, Init::normal_001);
  x = m.node<Dropout>({x}, "classifier.2", o.dropout_or(0.5f));
  x = m.node<Dense>({x}, "classifier.3", width, Activation::relu, true, Init::normal_001);
  x = m.node<Dropout>({x}, "classifier.5", o.dropout_or(0.5f));
  m.node<Dense>({x}, "classifier.6", o.classes, Activation::none, true, Init::normal_001);
}

}  // namespace scaletrain::nn
