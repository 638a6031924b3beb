// model.input and model.classes: their defaults (the data set's), TOML and command-line forms that
// print and read back alike, the error for a malformed shape, and the checks against the data set's
// shape that name both (train/model_shape.hpp).
#include <gtest/gtest.h>

#include <string>

#include "scaletrain/train/config.hpp"
#include "scaletrain/train/model_shape.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::train;
using scaletrain::testing::error_of;

namespace {

TEST(ModelShapeKeys, DefaultToTheDataSets) {
  RunConfig cfg;
  EXPECT_TRUE(cfg.model_input.empty());
  EXPECT_EQ(cfg.model_classes, 0);
  const std::string toml = config_to_toml(cfg);
  EXPECT_NE(toml.find("[model]\nname = \"lenet\"\ninput = \"\"\nclasses = 0\n"), std::string::npos) << toml;
  EXPECT_TRUE(config_differences(cfg).empty());
  EXPECT_FALSE(configured_model_shape(cfg).has_value());
}

TEST(ModelShapeKeys, TomlAndCommandLineReadBackAlike) {
  RunConfig toml;
  apply_toml_string(toml, "[model]\nname = \"resnet50\"\ninput = \"224, 224, 3\"\nclasses = 1000\n", "job.toml");
  EXPECT_EQ(toml.model_input, (Shape{224, 224, 3}));
  EXPECT_EQ(toml.model_classes, 1000);
  RunConfig cli;
  set_config_value(cli, "model.name", "resnet50", "command line");
  set_config_value(cli, "model.input", "224,224,3", "command line");
  set_config_value(cli, "model.classes", "1000", "command line");
  EXPECT_EQ(config_to_toml(cli), config_to_toml(toml));
  EXPECT_EQ(config_differences(cli), (std::vector<std::string>{"model.name = \"resnet50\"",
                                                               "model.input = \"224,224,3\"", "model.classes = 1000"}));
  // The printed configuration reads back to the same values.
  RunConfig again;
  apply_toml_string(again, config_to_toml(cli), "config.toml");
  EXPECT_EQ(again.model_input, cli.model_input);
  EXPECT_EQ(again.model_classes, cli.model_classes);
  EXPECT_EQ(config_hash(again), config_hash(cli));
  // Both set: the shape the model is built for, with no data set opened.
  const auto configured = configured_model_shape(cli);
  ASSERT_TRUE(configured.has_value());
  EXPECT_EQ(configured->sample_shape, (Shape{224, 224, 3}));
  EXPECT_EQ(configured->classes, 1000);
  // "" goes back to the data set's.
  set_config_value(cli, "model.input", "", "command line");
  EXPECT_TRUE(cli.model_input.empty());
  EXPECT_FALSE(configured_model_shape(cli).has_value());
}

TEST(ModelShapeKeys, MalformedValuesNameTheKey) {
  RunConfig cfg;
  for (const char* bad : {"224x224x3", "224,224", "224,224,3,1", "224,0,3", "224,-1,3", "a,b,c"})
    EXPECT_EQ(error_of([&] { set_config_value(cfg, "model.input", bad, "command line"); }),
              std::string("command line: model.input expects H,W,C (three positive integers, as 224,224,3), got '") +
                  bad + "'")
        << bad;
  EXPECT_TRUE(cfg.model_input.empty());
  cfg.model_classes = 1;
  EXPECT_NE(error_of([&] { validate_config(cfg); }).find("model.classes must be at least 2 (0: the data set's), got 1"),
            std::string::npos);
}

TEST(ModelShapeKeys, WithADataSetTheyMustMatchIt) {
  RunConfig cfg;
  const DatasetShape cifar{{32, 32, 3}, 10};
  // Unset: the data set's.
  EXPECT_EQ(model_shape_for(cfg, cifar).sample_shape, (Shape{32, 32, 3}));
  EXPECT_EQ(model_shape_for(cfg, cifar).classes, 10);
  // Set and equal: the same.
  cfg.model_input = {32, 32, 3};
  cfg.model_classes = 10;
  EXPECT_EQ(model_shape_for(cfg, cifar).sample_shape, (Shape{32, 32, 3}));
  // Set and different: an error naming both.
  cfg.data_path = "cifar10.h5";
  cfg.model_input = {224, 224, 3};
  EXPECT_NE(error_of([&] { model_shape_for(cfg, cifar); })
                .find("model.input is [224, 224, 3] but the samples of the data set (data.path = cifar10.h5) are "
                      "[32, 32, 3]"),
            std::string::npos);
  cfg.model_input.clear();
  cfg.model_classes = 1000;
  EXPECT_NE(error_of([&] {
              model_shape_for(cfg, cifar);
            }).find("model.classes is 1000 but the data set (data.path = cifar10.h5) has 10 classes"),
            std::string::npos);
}

}  // namespace
