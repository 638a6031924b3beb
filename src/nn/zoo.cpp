// The model zoo's table and make_zoo_model; the networks' builders are in zoo_*.cpp.
#include "scaletrain/nn/zoo.hpp"

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/join.hpp"

namespace scaletrain::nn {

const std::vector<ZooEntry>& zoo_entries() {
  using N = ParameterNaming;
  // name, about, defined for, naming, options it takes, builder
  // clang-format off
  static const std::vector<ZooEntry> table = {
      {"mlp", "Flatten, Dense 256 and 128 ReLU, Dense classes",
       {28, 28, 1}, N::sequential, kNoOptions, build_mlp},
      {"lenet", "LeNet-5 (5x5 convolutions, max pooling, 120 and 84 units)",
       {28, 28, 1}, N::sequential, kNoOptions, build_lenet},
      {"lenet_dropout", "lenet with Dropout 0.25 after the 120- and 84-unit layers",
       {28, 28, 1}, N::sequential, kNoOptions, build_lenet_dropout},
      {"fmnist_sepcnn", "TensorFlow's Fashion-MNIST multi-worker Keras network (separable convolutions, SELU)",
       {28, 28, 1}, N::sequential, kNoOptions, build_fmnist_sepcnn},
      {"resmlp", "a residual MLP (a test graph)",
       {28, 28, 1}, N::node, kNoOptions, build_resmlp},
      {"branchnet", "a small network with a two-branch Concat and a residual Add (a test graph)",
       {28, 28, 1}, N::node, kNoOptions, build_branchnet},
      {"resnet20", "He et al.'s CIFAR ResNet-20, option-A shortcuts, akamaster's names",
       {32, 32, 3}, N::node, kNoOptions, build_resnet20},
      {"resnet18", "torchvision 0.14's resnet18",
       {224, 224, 3}, N::node, kNoOptions, build_resnet18},
      {"resnet50", "torchvision 0.14's resnet50 (v1.5)",
       {224, 224, 3}, N::node, kNoOptions, build_resnet50},
      {"mobilenet_v2", "torchvision 0.14's mobilenet_v2 (inverted residuals, ReLU6, dropout 0.2)",
       {224, 224, 3}, N::node, kDropout | kStemStride, build_mobilenet_v2},
      {"vgg16", "torchvision 0.14's vgg16 (hidden classifier layers of model.classifier_width, default 4096)",
       {224, 224, 3}, N::node, kClassifierWidth | kDropout, build_vgg16},
      {"inception_v3", "torchvision 0.14's inception_v3 with its auxiliary classifier (weight 0.4 in training)",
       {299, 299, 3}, N::node, kDropout, build_inception_v3},
      {"vit", "torchvision 0.14's VisionTransformer with model.vit.* (patch_size, num_layers, num_heads, hidden_dim, "
       "mlp_dim; vit_tiny's by default)",
       {224, 224, 3}, N::node, kDropout | kVitArchitecture, build_vit},
      {"vit_tiny", "a VisionTransformer of patch 16, 12 layers, 3 heads, hidden 192, MLP 768",
       {224, 224, 3}, N::node, kDropout, build_vit_tiny},
      {"vit_b_16", "torchvision 0.14's vit_b_16 (patch 16, 12 layers, 12 heads, hidden 768, MLP 3072)",
       {224, 224, 3}, N::node, kDropout, build_vit_b_16},
  };
  // clang-format on
  return table;
}

std::vector<std::string> zoo_model_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : zoo_entries()) names.emplace_back(e.name);
  return names;
}

const ZooEntry& zoo_entry(const std::string& name) {
  for (const ZooEntry& e : zoo_entries())
    if (name == e.name) return e;
  ST_USER_FAIL("unknown model '", name, "' (the zoo has: ", join(zoo_model_names()), ")");
}

std::string zoo_description() {
  std::string out;
  for (const ZooEntry& e : zoo_entries())
    out += std::string(e.name) + ": " + e.about + " (defined for " + shape_string(e.defined_for) + ")\n";
  return out;
}

std::unique_ptr<Model> make_zoo_model(const std::string& name, const Shape& input_sample, const ZooOptions& options) {
  const ZooEntry& e = zoo_entry(name);
  ST_USER_CHECK(options.classes >= 2, "model '", name, "' needs at least 2 classes, got ", options.classes);
  ST_USER_CHECK(options.classifier_width >= 0, "model.classifier_width must be >= 0 (0: the network's own), got ",
                options.classifier_width);
  ST_USER_CHECK(options.dropout < 1.0f, "model.dropout must be below 1 (negative: the network's own), got ",
                options.dropout);
  ST_USER_CHECK(options.dropout < 0.0f || e.takes_option(kDropout), "model.dropout = ", options.dropout,
                " is set, but model '", name, "' has no classifier dropout");
  ST_USER_CHECK(options.stem_stride >= 0, "model.stem_stride must be >= 0 (0: the network's own), got ",
                options.stem_stride);
  ST_USER_CHECK(options.stem_stride == 0 || e.takes_option(kStemStride), "model.stem_stride = ", options.stem_stride,
                " is set, but model '", name, "' keeps its stem's stride");
  ST_USER_CHECK(options.classifier_width == 0 || e.takes_option(kClassifierWidth),
                "model.classifier_width = ", options.classifier_width, " is set, but model '", name,
                "' has no hidden classifier layers");
  ST_USER_CHECK(!options.vit.any_architecture() || e.takes_option(kVitArchitecture), "model.vit.* is set, but model '",
                name, "' keeps its architecture (model.name = vit takes it)");
  const VitOptions& v = options.vit;
  ST_USER_CHECK(v.image_size >= 0 && v.patch_size >= 0 && v.num_layers >= 0 && v.num_heads >= 0 && v.hidden_dim >= 0 &&
                    v.mlp_dim >= 0,
                "model.vit.* must be >= 0 (0: the network's own)");
  ST_USER_CHECK(v.image_size == 0 || (input_sample.size() == 3 && input_sample[0] == v.image_size &&
                                      input_sample[1] == v.image_size),
                "model.vit.image_size = ", v.image_size, " but the input is ", shape_string(input_sample),
                ": leave it unset to take the input's size");
  auto m = std::make_unique<Model>(name, e.naming);
  ZooOptions o = options;
  o.input = input_sample;
  e.build(*m, o);
  m->configure(input_sample);
  return m;
}

std::unique_ptr<Model> make_zoo_model(const std::string& name, const Shape& input_sample, int64_t num_classes) {
  ZooOptions options;
  options.classes = num_classes;
  return make_zoo_model(name, input_sample, options);
}

}  // namespace scaletrain::nn
