// Model zoo definitions.
#include "scaletrain/nn/zoo.hpp"

#include "scaletrain/core/join.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"
#include "scaletrain/nn/shape_layers.hpp"

namespace scaletrain::nn {
namespace {

// Flatten -> 256 ReLU -> 128 ReLU -> classes.
void build_mlp(Model& m, int64_t classes) {
  m.emplace<Flatten>("");
  m.emplace<Dense>("", 256, Activation::relu);
  m.emplace<Dense>("", 128, Activation::relu);
  m.emplace<Dense>("", classes);
}

// LeNet-5 for 28x28 input: conv 5x5 'same' 6, pool, conv 5x5 'valid' 16, pool, 120, 84, classes.
void build_lenet(Model& m, int64_t classes) {
  m.emplace<Conv2D>("", Conv2DOptions{6, 5, 1, Padding::same, 1, true, Activation::relu});
  m.emplace<MaxPool2D>("", 2);
  m.emplace<Conv2D>("", Conv2DOptions{16, 5, 1, Padding::valid, 1, true, Activation::relu});
  m.emplace<MaxPool2D>("", 2);
  m.emplace<Flatten>("");
  m.emplace<Dense>("", 120, Activation::relu);
  m.emplace<Dense>("", 84, Activation::relu);
  m.emplace<Dense>("", classes);
}

// LeNet-5 with dropout 0.25 after the 120- and 84-unit layers (tests of rank-independent dropout).
void build_lenet_dropout(Model& m, int64_t classes) {
  build_lenet(m, classes);
  LayerPtr last = std::move(m.layers().back());
  LayerPtr fc84 = std::move(m.layers()[m.layers().size() - 2]);
  m.layers().resize(m.layers().size() - 2);
  m.emplace<Dropout>("", 0.25f);
  m.add(std::move(fc84));
  m.emplace<Dropout>("", 0.25f);
  m.add(std::move(last));
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

}  // namespace

std::vector<std::string> zoo_model_names() { return {"mlp", "lenet", "lenet_dropout", "fmnist_sepcnn"}; }

std::unique_ptr<Model> make_zoo_model(const std::string& name, const Shape& input_sample, int64_t num_classes) {
  ST_CHECK(num_classes >= 2, "model '", name, "' needs at least 2 classes, got ", num_classes);
  auto m = std::make_unique<Model>(name);
  if (name == "mlp") build_mlp(*m, num_classes);
  else if (name == "lenet") build_lenet(*m, num_classes);
  else if (name == "lenet_dropout") build_lenet_dropout(*m, num_classes);
  else if (name == "fmnist_sepcnn") build_fmnist_sepcnn(*m, num_classes);
  else
    ST_USER_FAIL("unknown model '", name, "' (the zoo has: ", join(zoo_model_names()), ")");
  m->configure(input_sample);
  return m;
}

}  // namespace scaletrain::nn
