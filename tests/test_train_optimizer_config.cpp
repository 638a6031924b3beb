// optimizer.no_decay from TOML and the command line (canonical printing, the error for an unknown
// category), and the optimizer the trainer makes from it over a zoo model's named tensors.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/training_setup.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::train;
using scaletrain::testing::error_of;

namespace {

std::string printed_no_decay(const RunConfig& cfg) { return find_config_key("optimizer.no_decay")->get(cfg); }

TEST(NoDecayKey, DefaultsToNoneAndPrintsAsATomlArray) {
  RunConfig cfg;
  EXPECT_TRUE(cfg.no_decay.empty());
  EXPECT_EQ(printed_no_decay(cfg), "[]");
  EXPECT_NE(config_to_toml(cfg).find("[optimizer]\n"), std::string::npos);
  EXPECT_NE(config_to_toml(cfg).find("\nno_decay = []\n"), std::string::npos);
  EXPECT_TRUE(config_differences(cfg).empty());
}

TEST(NoDecayKey, TomlArrayAndCommandLineListGiveOneCanonicalForm) {
  RunConfig toml;
  apply_toml_string(toml, "[optimizer]\nno_decay = [\"norm\", \"bias\", \"norm\"]\n", "job.toml");
  EXPECT_EQ(printed_no_decay(toml), "[\"bias\", \"norm\"]");
  RunConfig cli;
  set_config_value(cli, "optimizer.no_decay", "bias, norm", "command line");
  EXPECT_EQ(cli.no_decay, toml.no_decay);
  ASSERT_EQ(config_differences(cli).size(), 1u);
  EXPECT_EQ(config_differences(cli)[0], "optimizer.no_decay = [\"bias\", \"norm\"]");
  // The printed configuration reads back to the same value.
  RunConfig again;
  apply_toml_string(again, config_to_toml(cli), "config.toml");
  EXPECT_EQ(again.no_decay, cli.no_decay);
  set_config_value(cli, "optimizer.no_decay", "", "command line");
  EXPECT_TRUE(cli.no_decay.empty());
  set_config_value(cli, "optimizer.no_decay", "[\"bias\"]", "command line");
  ASSERT_EQ(cli.no_decay.size(), 1u);
  EXPECT_EQ(cli.no_decay[0], optim::NoDecayCategory::bias);
}

TEST(NoDecayKey, UnknownCategoryNamesTheKeyAndTheAllowedValues) {
  RunConfig cfg;
  EXPECT_EQ(error_of([&] { set_config_value(cfg, "optimizer.no_decay", "bias,weights", "command line"); }),
            "command line: optimizer.no_decay: 'weights' is not one of bias, norm, embedding");
  EXPECT_NE(error_of([&] { apply_toml_string(cfg, "[optimizer]\nno_decay = [\"biases\"]\n", "job.toml"); })
                .find("job.toml: optimizer.no_decay: 'biases' is not one of bias, norm, embedding"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_toml_string(cfg, "[optimizer]\nno_decay = [1]\n", "job.toml"); })
                .find("job.toml: key 'optimizer.no_decay' must be an array of strings"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_toml_string(cfg, "[optimizer]\nweight_decay = [0.1]\n", "job.toml"); })
                .find("job.toml: key 'optimizer.weight_decay' takes one value (float), not an array"),
            std::string::npos);
  EXPECT_TRUE(cfg.no_decay.empty());
}

TEST(ConfigListItems, ReadsTomlArraysAndCommaLists) {
  EXPECT_EQ(config_list_items("[\"a\", 'b' ,c]"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(config_list_items(" a,b, "), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(config_list_items("[]").empty());
  EXPECT_TRUE(config_list_items("").empty());
}

std::unique_ptr<nn::Model> lenet() { return nn::make_zoo_model("lenet", {28, 28, 1}, 10); }

TEST(OptimizerTensors, NameEveryParameterAndTileTheFlatBuffer) {
  const auto model = lenet();
  const auto tensors = optimizer_tensors(*model);
  ASSERT_EQ(tensors.size(), model->slots().size());
  int64_t next = 0, biases = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& s = model->slots()[i];
    const std::string& parameter = model->layers()[s.layer]->parameters()[s.index].name;
    ASSERT_GT(tensors[i].name.size(), parameter.size() + 1);
    EXPECT_EQ(tensors[i].name.substr(tensors[i].name.size() - parameter.size() - 1), "." + parameter);
    EXPECT_EQ(tensors[i].offset, next);
    EXPECT_FALSE(tensors[i].norm);
    next += tensors[i].count;
    biases += tensors[i].name.size() > 5 && tensors[i].name.substr(tensors[i].name.size() - 5) == ".bias";
  }
  EXPECT_EQ(next, model->parameter_count());
  EXPECT_GT(biases, 0);
}

// Plain SGD on zero gradients is weight decay alone: p -= lr * wd * p on the decayed tensors.
TEST(OptimizerTensors, NoDecayBiasLeavesTheModelsBiasesAlone) {
  const auto model = lenet();
  std::unique_ptr<Backend> backend = make_cpu_backend(1);
  RunConfig cfg;
  cfg.momentum = 0;
  cfg.weight_decay = 0.5;
  set_config_value(cfg, "optimizer.no_decay", "bias", "test");
  auto opt = make_optimizer(cfg, *backend, *model);
  Tensor& p = model->flat_parameters();
  for (int64_t i = 0; i < p.numel(); ++i) p.data<float>()[i] = 1.0f;
  const Tensor zero = Tensor::zeros({p.numel()});
  opt->step(p, zero, 0.1f);
  for (const auto& t : optimizer_tensors(*model)) {
    const bool bias = t.name.substr(t.name.rfind('.') + 1) == "bias";
    for (int64_t i = t.offset; i < t.offset + t.count; ++i)
      ASSERT_FLOAT_EQ(p.data<float>()[i], bias ? 1.0f : 0.95f) << t.name << " element " << i - t.offset;
  }
}

}  // namespace
