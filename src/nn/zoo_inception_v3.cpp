// torchvision 0.14's Inception-v3 with its auxiliary classifier (aux_logits=True, transform_input=False):
// the stem (Conv2d_1a_3x3 ... maxpool2), Mixed_5b-5d (InceptionA), Mixed_6a (B), Mixed_6b-6e (C, with
// 1x7 and 7x1 convolutions), AuxLogits on Mixed_6e's output, Mixed_7a (D), Mixed_7b-7c (E), global
// average pooling, Dropout 0.5 and fc. Every convolution is a BasicConv2d: no bias, BatchNorm with
// eps 0.001 and ReLU (nodes <name>.conv and <name>.bn). The branches' average poolings count the
// padding (F.avg_pool2d's default). Each block's branches are concatenated along the channels in
// torchvision's order. The auxiliary classifier's logits are an auxiliary output, weighted 0.4 in
// training (the paper's and torchvision's recipes) and not computed in evaluation. 27,161,264
// parameters at 299x299x3, 1000 classes.
#include <vector>

#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/zoo_networks.hpp"

namespace scaletrain::nn {
namespace {

constexpr float kAuxiliaryWeight = 0.4f;

// BasicConv2d <name>: conv (no bias, padding (ph, pw)), BatchNorm eps 0.001 with its ReLU.
std::string basic_conv(Model& m, const std::string& x, const std::string& name, int64_t filters, KernelSize kernel,
                       int64_t stride = 1, Padding padding = Padding::valid) {
  const std::string c =
      m.node<Conv2D>({x}, name + ".conv", Conv2DOptions{filters, kernel, stride, padding, 1, false, Activation::none},
                     Init::he_normal_fan_out);
  return m.node<BatchNorm2d>({c}, name + ".bn", Activation::relu, 0.1f, 0.001f);
}

// The branches' 3x3 stride-1 average pooling with padding 1 counted in the divisor.
std::string pool_branch(Model& m, const std::string& x, const std::string& block, int64_t filters) {
  const std::string p = m.node<AvgPool2D>({x}, block + ".avg_pool", 3, 1, Padding::symmetric(1), true);
  return basic_conv(m, p, block + ".branch_pool", filters, 1);
}

std::string inception_a(Model& m, const std::string& x, const std::string& b, int64_t pool_features) {
  const std::string b1 = basic_conv(m, x, b + ".branch1x1", 64, 1);
  std::string b5 = basic_conv(m, x, b + ".branch5x5_1", 48, 1);
  b5 = basic_conv(m, b5, b + ".branch5x5_2", 64, 5, 1, Padding::symmetric(2));
  std::string b3 = basic_conv(m, x, b + ".branch3x3dbl_1", 64, 1);
  b3 = basic_conv(m, b3, b + ".branch3x3dbl_2", 96, 3, 1, Padding::symmetric(1));
  b3 = basic_conv(m, b3, b + ".branch3x3dbl_3", 96, 3, 1, Padding::symmetric(1));
  const std::string bp = pool_branch(m, x, b, pool_features);
  return m.node<Concat>({b1, b5, b3, bp}, b + ".cat");
}

std::string inception_b(Model& m, const std::string& x, const std::string& b) {
  const std::string b3 = basic_conv(m, x, b + ".branch3x3", 384, 3, 2);
  std::string bd = basic_conv(m, x, b + ".branch3x3dbl_1", 64, 1);
  bd = basic_conv(m, bd, b + ".branch3x3dbl_2", 96, 3, 1, Padding::symmetric(1));
  bd = basic_conv(m, bd, b + ".branch3x3dbl_3", 96, 3, 2);
  const std::string bp = m.node<MaxPool2D>({x}, b + ".max_pool", 3, 2);
  return m.node<Concat>({b3, bd, bp}, b + ".cat");
}

std::string inception_c(Model& m, const std::string& x, const std::string& b, int64_t c7) {
  const KernelSize row{1, 7}, column{7, 1};
  const Padding row_pad = Padding::symmetric(0, 3), column_pad = Padding::symmetric(3, 0);
  const std::string b1 = basic_conv(m, x, b + ".branch1x1", 192, 1);
  std::string b7 = basic_conv(m, x, b + ".branch7x7_1", c7, 1);
  b7 = basic_conv(m, b7, b + ".branch7x7_2", c7, row, 1, row_pad);
  b7 = basic_conv(m, b7, b + ".branch7x7_3", 192, column, 1, column_pad);
  std::string bd = basic_conv(m, x, b + ".branch7x7dbl_1", c7, 1);
  bd = basic_conv(m, bd, b + ".branch7x7dbl_2", c7, column, 1, column_pad);
  bd = basic_conv(m, bd, b + ".branch7x7dbl_3", c7, row, 1, row_pad);
  bd = basic_conv(m, bd, b + ".branch7x7dbl_4", c7, column, 1, column_pad);
  bd = basic_conv(m, bd, b + ".branch7x7dbl_5", 192, row, 1, row_pad);
  const std::string bp = pool_branch(m, x, b, 192);
  return m.node<Concat>({b1, b7, bd, bp}, b + ".cat");
}

std::string inception_d(Model& m, const std::string& x, const std::string& b) {
  std::string b3 = basic_conv(m, x, b + ".branch3x3_1", 192, 1);
  b3 = basic_conv(m, b3, b + ".branch3x3_2", 320, 3, 2);
  std::string b7 = basic_conv(m, x, b + ".branch7x7x3_1", 192, 1);
  b7 = basic_conv(m, b7, b + ".branch7x7x3_2", 192, KernelSize{1, 7}, 1, Padding::symmetric(0, 3));
  b7 = basic_conv(m, b7, b + ".branch7x7x3_3", 192, KernelSize{7, 1}, 1, Padding::symmetric(3, 0));
  b7 = basic_conv(m, b7, b + ".branch7x7x3_4", 192, 3, 2);
  const std::string bp = m.node<MaxPool2D>({x}, b + ".max_pool", 3, 2);
  return m.node<Concat>({b3, b7, bp}, b + ".cat");
}

// InceptionE: torch.cat of [1x1, cat(3x3_2a, 3x3_2b), cat(dbl_3a, dbl_3b), pool] is one six-way Concat.
std::string inception_e(Model& m, const std::string& x, const std::string& b) {
  const Padding row_pad = Padding::symmetric(0, 1), column_pad = Padding::symmetric(1, 0);
  const std::string b1 = basic_conv(m, x, b + ".branch1x1", 320, 1);
  const std::string b3 = basic_conv(m, x, b + ".branch3x3_1", 384, 1);
  const std::string b3a = basic_conv(m, b3, b + ".branch3x3_2a", 384, KernelSize{1, 3}, 1, row_pad);
  const std::string b3b = basic_conv(m, b3, b + ".branch3x3_2b", 384, KernelSize{3, 1}, 1, column_pad);
  std::string bd = basic_conv(m, x, b + ".branch3x3dbl_1", 448, 1);
  bd = basic_conv(m, bd, b + ".branch3x3dbl_2", 384, 3, 1, Padding::symmetric(1));
  const std::string bda = basic_conv(m, bd, b + ".branch3x3dbl_3a", 384, KernelSize{1, 3}, 1, row_pad);
  const std::string bdb = basic_conv(m, bd, b + ".branch3x3dbl_3b", 384, KernelSize{3, 1}, 1, column_pad);
  const std::string bp = pool_branch(m, x, b, 192);
  return m.node<Concat>({b1, b3a, b3b, bda, bdb, bp}, b + ".cat");
}

// The side of Mixed_6e's grid for an input side: the stem's valid 3x3 convolutions and stride-2
// 3x3 poolings, then Mixed_6a's stride 2.
int64_t mixed_6e_side(int64_t side) {
  const auto strided = [](int64_t s) { return (s - 3) / 2 + 1; };
  side = strided(side);  // Conv2d_1a_3x3
  side -= 2;             // Conv2d_2a_3x3 (2b keeps it)
  side = strided(side);  // maxpool1
  side -= 2;             // Conv2d_4a_3x3 (3b keeps it)
  side = strided(side);  // maxpool2
  return strided(side);  // Mixed_6a
}

// InceptionAux: 5x5 stride-3 average pooling, conv0 1x1 128, conv1 5x5 768, global average
// pooling, fc. The pooling needs a 17x17 grid (299x299 inputs) for conv1's 5x5; on a smaller grid an
// adaptive pooling to 5x5 stands in and the model is for evaluation only (torchvision's training
// fails there too), so that the head's parameters are still there to load and save.
std::string auxiliary_head(Model& m, const std::string& x, int64_t classes, bool fits) {
  const std::string p = fits ? m.node<AvgPool2D>({x}, "AuxLogits.avg_pool", 5, 3)
                             : m.node<AdaptiveAvgPool2D>({x}, "AuxLogits.avg_pool", 5, 5);
  std::string h = basic_conv(m, p, "AuxLogits.conv0", 128, 1);
  h = basic_conv(m, h, "AuxLogits.conv1", 768, 5);
  h = m.node<GlobalAvgPool>({h}, "AuxLogits.avgpool");
  return m.node<Dense>({h}, "AuxLogits.fc", classes, Activation::none, true, Init::normal_001);
}

}  // namespace

void build_inception_v3(Model& m, const ZooOptions& o) {
  std::string x = basic_conv(m, Model::input(), "Conv2d_1a_3x3", 32, 3, 2);
  x = basic_conv(m, x, "Conv2d_2a_3x3", 32, 3);
  x = basic_conv(m, x, "Conv2d_2b_3x3", 64, 3, 1, Padding::symmetric(1));
  x = m.node<MaxPool2D>({x}, "maxpool1", 3, 2);
  x = basic_conv(m, x, "Conv2d_3b_1x1", 80, 1);
  x = basic_conv(m, x, "Conv2d_4a_3x3", 192, 3);
  x = m.node<MaxPool2D>({x}, "maxpool2", 3, 2);
  x = inception_a(m, x, "Mixed_5b", 32);
  x = inception_a(m, x, "Mixed_5c", 64);
  x = inception_a(m, x, "Mixed_5d", 64);
  x = inception_b(m, x, "Mixed_6a");
  x = inception_c(m, x, "Mixed_6b", 128);
  x = inception_c(m, x, "Mixed_6c", 160);
  x = inception_c(m, x, "Mixed_6d", 160);
  x = inception_c(m, x, "Mixed_6e", 192);
  const bool fits = o.input.size() == 3 && mixed_6e_side(o.input[0]) >= 17 && mixed_6e_side(o.input[1]) >= 17;
  m.add_auxiliary_output(auxiliary_head(m, x, o.classes, fits), kAuxiliaryWeight);
  if (!fits)
    m.set_evaluation_only(
        "inception_v3's auxiliary classifier trains from 299x299 inputs (a 17x17 grid at Mixed_6e), "
        "the input is " +
        shape_string(o.input));
  x = inception_d(m, x, "Mixed_7a");
  x = inception_e(m, x, "Mixed_7b");
  x = inception_e(m, x, "Mixed_7c");
  x = m.node<GlobalAvgPool>({x}, "avgpool");
  x = m.node<Dropout>({x}, "dropout", o.dropout_or(0.5f));
  m.node<Dense>({x}, "fc", o.classes, Activation::none, true, Init::normal_001);
}

}  // namespace scaletrain::nn
