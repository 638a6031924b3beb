// The seeds' convolutional networks (issue 61) as the zoo builds them: parameter and buffer counts at
// 1000 classes equal torchvision 0.14's, the table behind names and descriptions, the options a
// network takes or refuses, and inception_v3's auxiliary output (trained, skipped in evaluation, and
// an evaluation-only model below 299x299).
#include <gtest/gtest.h>

#include <numeric>

#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/device_tensors.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::error_of;

namespace {

int64_t buffer_values(const nn::Model& m) {
  int64_t n = 0;
  for (const nn::BufferSlot& b : m.buffer_slots()) n += b.count;
  return n;
}

// torchvision 0.14's counts: sum(p.numel()) over parameters(), buffers() and their tensors.
TEST(ZooNetworks, CountsAreTorchvisions) {
  struct Expected {
    const char* name;
    Shape input;
    int64_t parameters, buffers, buffer_tensors;
  };
  for (const Expected& e : {Expected{"mobilenet_v2", {224, 224, 3}, 3504872, 34164, 156},
                            Expected{"vgg16", {224, 224, 3}, 138357544, 0, 0},
                            Expected{"inception_v3", {299, 299, 3}, 27161264, 36320, 288}}) {
    const auto m = nn::make_zoo_model(e.name, e.input, 1000);
    EXPECT_EQ(m->parameter_count(), e.parameters) << e.name;
    EXPECT_EQ(buffer_values(*m), e.buffers) << e.name;
    EXPECT_EQ(static_cast<int64_t>(m->buffer_slots().size()), e.buffer_tensors) << e.name;
  }
}

// The table names every network once; the description gives each its line and defined input.
TEST(ZooNetworks, TheTableDescribesEveryNetwork) {
  const std::vector<std::string> names = nn::zoo_model_names();
  ASSERT_EQ(names.size(), nn::zoo_entries().size());
  const std::string d = nn::zoo_description();
  for (const std::string& n : names) EXPECT_NE(d.find(n + ": "), std::string::npos) << d;
  EXPECT_NE(d.find("inception_v3: torchvision 0.14's inception_v3 with its auxiliary classifier (weight 0.4 in "
                   "training) (defined for [299, 299, 3])"),
            std::string::npos)
      << d;
  EXPECT_EQ(nn::zoo_entry("vgg16").defined_for, (Shape{224, 224, 3}));
}

// A one-channel stem, other class counts and inputs the networks accept.
TEST(ZooNetworks, TakeTheDataSetsChannelsClassesAndInput) {
  EXPECT_EQ(nn::make_zoo_model("mobilenet_v2", {28, 28, 1}, 10)->output_shape(), (Shape{10}));
  EXPECT_EQ(nn::make_zoo_model("vgg16", {32, 32, 1}, 7)->output_shape(), (Shape{7}));
  EXPECT_EQ(nn::make_zoo_model("inception_v3", {75, 75, 1}, 10)->output_shape(), (Shape{10}));
}

// model.classifier_width narrows vgg16's hidden layers; model.dropout reaches the networks with a
// classifier dropout; either is an error for a network without one, naming both.
TEST(ZooNetworks, OptionsApplyWhereTheNetworkHasThemAndAreRefusedElsewhere) {
  nn::ZooOptions o;
  o.classes = 10;
  o.classifier_width = 64;
  const auto narrow = nn::make_zoo_model("vgg16", {32, 32, 3}, o);
  EXPECT_EQ(narrow->parameter_count(), 14714688 + (25088 * 64 + 64) + (64 * 64 + 64) + (64 * 10 + 10));
  EXPECT_NE(error_of([&] { nn::make_zoo_model("resnet18", {32, 32, 3}, o); })
                .find("model.classifier_width = 64 is set, but model 'resnet18' has no hidden classifier layers"),
            std::string::npos);
  nn::ZooOptions d;
  d.classes = 10;
  d.dropout = 0.1f;
  EXPECT_NO_THROW(nn::make_zoo_model("mobilenet_v2", {32, 32, 3}, d));
  EXPECT_NE(error_of([&] { nn::make_zoo_model("resnet20", {32, 32, 3}, d); })
                .find("model.dropout = 0.1 is set, but model 'resnet20' has no classifier dropout"),
            std::string::npos);
  nn::ZooOptions s;
  s.classes = 10;
  s.stem_stride = 1;
  EXPECT_EQ(nn::make_zoo_model("mobilenet_v2", {28, 28, 1}, s)->layers().front()->output_shape(), (Shape{28, 28, 32}));
  EXPECT_NE(error_of([&] { nn::make_zoo_model("vgg16", {32, 32, 3}, s); })
                .find("model.stem_stride = 1 is set, but model 'vgg16' keeps its stem's stride"),
            std::string::npos);
  d.dropout = 1.0f;
  EXPECT_NE(error_of([&] { nn::make_zoo_model("vgg16", {32, 32, 3}, d); }).find("model.dropout must be below 1"),
            std::string::npos);
}

// inception_v3's auxiliary classifier: its layers lead to the auxiliary output only, so evaluation
// skips them; a training forward computes its logits, and backward needs their gradient.
TEST(ZooNetworks, InceptionsAuxiliaryOutputRunsInTrainingOnly) {
  const auto m = nn::make_zoo_model("inception_v3", {299, 299, 3}, 10);
  ASSERT_EQ(m->auxiliary_outputs().size(), 1u);
  EXPECT_EQ(m->auxiliary_outputs()[0].node, "AuxLogits.fc");
  EXPECT_FLOAT_EQ(m->auxiliary_outputs()[0].weight, 0.4f);
  EXPECT_TRUE(m->evaluation_only().empty());
  size_t training_only = 0;
  for (size_t i = 0; i < m->layers().size(); ++i) {
    const bool aux = m->layers()[i]->name().rfind("AuxLogits.", 0) == 0;
    EXPECT_EQ(m->training_only(i), aux) << m->layers()[i]->name();
    training_only += m->training_only(i) ? 1 : 0;
  }
  EXPECT_EQ(training_only, 7u);  // avg_pool, conv0.conv, conv0.bn, conv1.conv, conv1.bn, avgpool, fc
  EXPECT_EQ(m->layers().back()->name(), "fc");  // the model's output runs last
}

// Below 299x299 the auxiliary head cannot run: the model evaluates (the head's parameters are still
// there to load) and refuses to train, saying why.
TEST(ZooNetworks, InceptionBelow299IsForEvaluationOnly) {
  const auto backend = make_cpu_backend();
  auto m = nn::make_zoo_model("inception_v3", {75, 75, 3}, 10);
  EXPECT_EQ(m->parameter_count(), nn::make_zoo_model("inception_v3", {299, 299, 3}, 10)->parameter_count());
  m->build(*backend, 2);
  m->init_parameters(1);
  const Tensor x = scaletrain::testing::on_device(*backend, Tensor::zeros({2, 75, 75, 3}, DType::f32, "x"));
  EXPECT_NO_THROW(m->forward(x, false));
  EXPECT_NE(error_of([&] { m->forward(x, true); })
                .find("model 'inception_v3' cannot train: inception_v3's auxiliary classifier trains from 299x299 "
                      "inputs (a 17x17 grid at Mixed_6e), the input is [75, 75, 3]"),
            std::string::npos);
  EXPECT_THROW(m->auxiliary_logits(0), Error);  // computed by a training forward only
}

}  // namespace
