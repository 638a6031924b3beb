// The model zoo: exact parameter counts (Keras' for fmnist_sepcnn), the summary table, and clear
// errors for an unknown model, a shape mismatch between layers and a non-positive batch.
#include <gtest/gtest.h>

#include <algorithm>

#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::error_of;

namespace {

TEST(Zoo, ParameterCounts) {
  EXPECT_EQ(nn::make_zoo_model("fmnist_sepcnn", {28, 28, 1}, 10)->parameter_count(), 2887306);
  EXPECT_EQ(nn::make_zoo_model("lenet", {28, 28, 1}, 10)->parameter_count(), 61706);
  EXPECT_EQ(nn::make_zoo_model("mlp", {28, 28, 1}, 10)->parameter_count(), 235146);
}

// 3x the forward FLOPs, but 2x for the first layer with parameters: it computes no input gradient.
TEST(Zoo, TrainingFlopsSkipTheFirstInputGradient) {
  auto mlp = nn::make_zoo_model("mlp", {28, 28, 1}, 10);
  EXPECT_FALSE(mlp->runs_backward(0));  // the Flatten before the first Dense
  EXPECT_TRUE(mlp->runs_backward(1));
  EXPECT_FALSE(mlp->needs_input_gradient(1, 0));
  EXPECT_TRUE(mlp->needs_input_gradient(2, 0));
  EXPECT_EQ(mlp->training_flops_of_layer(1), 2 * mlp->layers()[1]->flops_per_sample());
  EXPECT_EQ(mlp->training_flops_per_sample(), 3 * mlp->flops_per_sample() - mlp->layers()[1]->flops_per_sample());
  auto lenet = nn::make_zoo_model("lenet", {28, 28, 1}, 10);
  EXPECT_TRUE(lenet->runs_backward(0));
  EXPECT_FALSE(lenet->needs_input_gradient(0, 0));
  EXPECT_EQ(lenet->training_flops_per_sample(),
            3 * lenet->flops_per_sample() - lenet->layers()[0]->flops_per_sample());
}

TEST(Zoo, SummaryLooksLikeKeras) {
  auto m = nn::make_zoo_model("fmnist_sepcnn", {28, 28, 1}, 10);
  const std::string s = m->summary();
  EXPECT_NE(s.find("Total params: 2,887,306"), std::string::npos) << s;
  EXPECT_NE(s.find("Trainable params: 2,887,306"), std::string::npos) << s;
  EXPECT_NE(s.find(" conv2d (Conv2D)"), std::string::npos) << s;
  EXPECT_NE(s.find(" separable_conv2d_4 (SeparableConv2D)"), std::string::npos) << s;
  EXPECT_NE(s.find("(None, 3, 3, 512)"), std::string::npos) << s;
  EXPECT_NE(s.find("(None, 4608)"), std::string::npos) << s;
  EXPECT_NE(s.find(" dense_1 (Dense)"), std::string::npos) << s;
  // conv2d: 28*28*128 outputs x 9 multiply-adds = 1.81 MFLOP/sample
  EXPECT_EQ(m->layers()[0]->flops_per_sample(), 2LL * 28 * 28 * 128 * 9);
}

TEST(Zoo, FlatParametersAreInReverseLayerOrder) {
  auto m = nn::make_zoo_model("lenet", {28, 28, 1}, 10);
  ASSERT_FALSE(m->slots().empty());
  EXPECT_EQ(m->slots().front().layer, m->layers().size() - 1);  // the last Dense comes first
  EXPECT_EQ(m->slots().front().offset, 0);
  EXPECT_EQ(m->slots().back().layer, 0u);
  EXPECT_EQ(m->slots().back().offset + m->slots().back().count, m->parameter_count());
}

TEST(Zoo, UnknownModelListsTheZoo) {
  const std::string e = error_of([] { nn::make_zoo_model("resnet9000", {28, 28, 1}, 10); });
  EXPECT_NE(e.find("unknown model 'resnet9000' (the zoo has: mlp, lenet, lenet_dropout, fmnist_sepcnn, resmlp, "
                   "branchnet, resnet20, resnet18, resnet50, mobilenet_v2, vgg16, inception_v3, vit, vit_tiny, vit_b_16)"),
            std::string::npos)
      << e;
}

TEST(Zoo, ShapeMismatchNamesTheLayer) {
  nn::Model m("broken");
  m.emplace<nn::Flatten>("");
  m.emplace<nn::Dense>("", 10);
  m.emplace<nn::Conv2D>("", nn::Conv2DOptions{4, 3, 1, nn::Padding::same, 1, true, nn::Activation::relu});
  const std::string e = error_of([&] { m.configure({8, 8, 1}); });
  EXPECT_NE(e.find("layer 'conv2d' (Conv2D): expects [H, W, C] input per sample, got [10]"), std::string::npos) << e;
  const std::string small = error_of([] { nn::make_zoo_model("lenet", {3, 3, 1}, 10); });
  EXPECT_NE(small.find("is larger than the input"), std::string::npos) << small;
}

TEST(Zoo, NonPositiveBatchIsRejected) {
  auto m = nn::make_zoo_model("mlp", {28, 28, 1}, 10);
  auto backend = make_cpu_backend();
  EXPECT_NE(error_of([&] { m->build(*backend, 0); }).find("batch size must be positive, got 0"), std::string::npos);
  EXPECT_NE(error_of([&] { m->build(*backend, -4); }).find("batch size must be positive, got -4"), std::string::npos);
}

TEST(Zoo, InitializationIsDeterministicAndScaled) {
  auto a = nn::make_zoo_model("lenet", {28, 28, 1}, 10);
  auto b = nn::make_zoo_model("lenet", {28, 28, 1}, 10);
  a->init_parameters(5);
  b->init_parameters(5);
  const float* pa = a->flat_parameters().data<float>();
  const float* pb = b->flat_parameters().data<float>();
  double sq = 0;
  for (int64_t i = 0; i < a->parameter_count(); ++i) {
    ASSERT_EQ(pa[i], pb[i]);
    sq += static_cast<double>(pa[i]) * pa[i];
  }
  EXPECT_GT(sq, 1.0);
  b->init_parameters(6);
  EXPECT_NE(pa[0] + pa[100], b->flat_parameters().data<float>()[0] + b->flat_parameters().data<float>()[100]);
}

}  // namespace

// The ViTs' configuration errors name what is wrong: the architecture on a preset, an image size that
// is not the input's, a patch that does not tile the image, heads that do not divide the tokens' width.
TEST(Zoo, VitOptionsAreCheckedByName) {
  nn::ZooOptions o;
  o.classes = 10;
  o.vit.patch_size = 7;
  EXPECT_NE(error_of([&] { nn::make_zoo_model("vit_tiny", {224, 224, 3}, o); })
                .find("model.vit.* is set, but model 'vit_tiny' keeps its architecture"),
            std::string::npos);
  o.vit.image_size = 32;
  EXPECT_NE(error_of([&] { nn::make_zoo_model("vit", {28, 28, 1}, o); })
                .find("model.vit.image_size = 32 but the input is [28, 28, 1]"),
            std::string::npos);
  o.vit.image_size = 0;
  o.vit.patch_size = 5;
  EXPECT_NE(error_of([&] { nn::make_zoo_model("vit", {28, 28, 1}, o); })
                .find("must be [H, W, C] with H and W multiples of the patch size 5"),
            std::string::npos);
  o.vit.patch_size = 7;
  o.vit.hidden_dim = 30;
  o.vit.num_heads = 4;
  EXPECT_NE(error_of([&] { nn::make_zoo_model("vit", {28, 28, 1}, o); }).find("hidden_dim 30 must divide into 4 heads"),
            std::string::npos);
  o.vit.hidden_dim = 32;
  o.vit.num_layers = 1;
  o.vit.mlp_dim = 64;
  const auto m = nn::make_zoo_model("vit", {28, 28, 1}, o);
  // conv_proj 32x1x7x7 + 32, class token 32, positions 17x32, per block 2 LayerNorms (4 x 32), attention
  // (3 x 32 x 32 + 96 + 32 x 32 + 32), MLP (64 x 32 + 64 + 32 x 64 + 32); the final LayerNorm; the head.
  const int64_t block = 4 * 32 + (3 * 32 * 32 + 96 + 32 * 32 + 32) + (64 * 32 + 64 + 32 * 64 + 32);
  EXPECT_EQ(m->parameter_count(), 32 * 49 + 32 + 32 + 17 * 32 + block + 64 + 32 * 10 + 10);
  // optimizer.no_decay = embedding: the class token and the position embedding, nothing else.
  std::vector<std::string> embeddings;
  for (const nn::ParameterSlot& slot : m->slots())
    if (m->layers()[slot.layer]->parameters()[slot.index].embedding) embeddings.push_back(slot.name);
  std::sort(embeddings.begin(), embeddings.end());
  EXPECT_EQ(embeddings, (std::vector<std::string>{"class_token", "encoder.pos_embedding"}));
}
