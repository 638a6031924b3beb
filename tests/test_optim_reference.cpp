// SGD, AdamW and the learning-rate schedules against torch.optim 1.13 (tests/data/optim_reference.h5,
// written by tests/reference/make_optim_reference.py): the same gradients and learning rates fed for
// several steps give the same parameters, also with the buffer split into tensors and the biases
// excluded from weight decay (two torch param groups), and the schedules give the same rates step by
// step. Also the update ranges that per-tensor options produce, and which tensors LARS and LAMB adapt.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "scaletrain/core/error.hpp"
#include "scaletrain/optim/lr_schedule.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/optim/tensor_norms.hpp"
#include "support/reference_file.hpp"

using namespace scaletrain;
using scaletrain::testing::ReferenceFile;

namespace {

Backend* cpu_backend() {
  static std::unique_ptr<Backend> b = make_cpu_backend(1);
  return b.get();
}

const std::string kFile = std::string(SCALETRAIN_TEST_DATA_DIR) + "/optim_reference.h5";

class OptimizerReference : public ::testing::TestWithParam<std::string> {};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t comma; (comma = s.find(',', start)) != std::string::npos; start = comma + 1)
    out.push_back(s.substr(start, comma - start));
  out.push_back(s.substr(start));
  return out;
}

TEST_P(OptimizerReference, TrajectoryMatchesTorch) {
  ReferenceFile f(kFile);
  const std::string g = "optim/" + GetParam();
  const Tensor p0 = f.dataset(g + "/p0"), grads = f.dataset(g + "/grads"), lrs = f.dataset(g + "/lrs"),
               ref = f.dataset(g + "/p");
  const int64_t n = p0.numel(), steps = lrs.numel();
  // The split cases: named tensors, and the categories torch's second param group (no decay) holds.
  std::vector<optim::ParameterTensor> tensors;
  std::vector<optim::NoDecayCategory> no_decay;
  if (GetParam().find("no_decay") != std::string::npos) {
    const auto names = split_commas(f.attr_string(g, "tensor_names"));
    const auto offsets = f.attr_ints(g, "tensor_offsets"), counts = f.attr_ints(g, "tensor_counts");
    ASSERT_EQ(names.size(), offsets.size());
    ASSERT_EQ(names.size(), counts.size());
    for (size_t i = 0; i < names.size(); ++i) tensors.push_back({names[i], offsets[i], counts[i]});
    for (const auto& c : split_commas(f.attr_string(g, "no_decay"))) no_decay.push_back(optim::parse_no_decay_category(c));
  }
  std::unique_ptr<optim::Optimizer> opt;
  if (GetParam().rfind("sgd", 0) == 0) {
    optim::SgdOptions o;
    o.momentum = static_cast<float>(f.attr_double(g, "momentum"));
    o.dampening = static_cast<float>(f.attr_double(g, "dampening"));
    o.weight_decay = static_cast<float>(f.attr_double(g, "weight_decay"));
    o.nesterov = f.attr_int(g, "nesterov") != 0;
    opt = optim::make_sgd(o, *cpu_backend(), tensors, no_decay);
  } else {
    optim::AdamWOptions o;
    o.beta1 = static_cast<float>(f.attr_double(g, "beta1"));
    o.beta2 = static_cast<float>(f.attr_double(g, "beta2"));
    o.eps = static_cast<float>(f.attr_double(g, "eps"));
    o.weight_decay = static_cast<float>(f.attr_double(g, "weight_decay"));
    opt = optim::make_adamw(o, *cpu_backend(), tensors, no_decay);
  }
  Tensor p = p0.clone();
  for (int64_t s = 0; s < steps; ++s) {
    const Tensor gs = grads.view(s * n, {n});
    opt->step(p, gs, lrs.data<float>()[s]);
    for (int64_t i = 0; i < n; ++i) {
      const float want = ref.data<float>()[s * n + i];
      ASSERT_NEAR(p.data<float>()[i], want, 2e-6 + 2e-5 * std::fabs(want)) << GetParam() << " step " << s << " i " << i;
    }
  }
  EXPECT_EQ(opt->steps_taken(), steps);
}

INSTANTIATE_TEST_SUITE_P(Torch, OptimizerReference,
                         ::testing::Values("sgd_plain", "sgd_momentum_wd", "sgd_dampening", "sgd_nesterov_wd",
                                           "adamw_default", "adamw_custom", "sgd_momentum_wd_no_decay_bias",
                                           "adamw_no_decay_bias"),
                         [](const auto& info) { return info.param; });

class ScheduleReference : public ::testing::TestWithParam<std::string> {};

TEST_P(ScheduleReference, RatesMatchTorch) {
  ReferenceFile f(kFile);
  const std::string g = "schedule/" + GetParam();
  optim::LrScheduleOptions o;
  const std::string kind = GetParam().find("cosine") != std::string::npos ? "cosine"
                           : GetParam().find("poly") != std::string::npos  ? "poly"
                           : GetParam().find("step") != std::string::npos  ? "step"
                                                                           : "constant";
  o.kind = optim::parse_lr_schedule_kind(kind);
  o.base_lr = static_cast<float>(f.attr_double(g, "base"));
  o.warmup_steps = f.attr_int(g, "warmup");
  if (o.warmup_steps > 0) o.warmup_start_factor = static_cast<float>(f.attr_double(g, "start_factor"));
  if (kind == "step") {
    o.step_size = f.attr_int(g, "step_size");
    o.gamma = static_cast<float>(f.attr_double(g, "gamma"));
  }
  if (kind == "cosine") {
    o.total_steps = f.attr_int(g, "total");
    o.min_lr = static_cast<float>(f.attr_double(g, "min_lr"));
  }
  if (kind == "poly") {  // torch's PolynomialLR decays to 0 (min_lr 0)
    o.total_steps = f.attr_int(g, "total");
    o.power = static_cast<float>(f.attr_double(g, "power"));
  }
  const optim::LrSchedule sched(o);
  const Tensor lrs = f.dataset(g + "/lrs");
  for (int64_t s = 0; s < lrs.numel(); ++s)
    EXPECT_NEAR(sched.lr(s), lrs.data<float>()[s], 1e-6 + 1e-5 * lrs.data<float>()[s]) << GetParam() << " step " << s;
}

INSTANTIATE_TEST_SUITE_P(Torch, ScheduleReference,
                         ::testing::Values("constant", "warmup_constant", "step", "warmup_step", "cosine",
                                           "warmup_cosine", "poly", "warmup_poly"),
                         [](const auto& info) { return info.param; });

TEST(Optimizer, BadOptionsAreClearErrors) {
  optim::SgdOptions s;
  s.momentum = -1;
  EXPECT_THROW(optim::make_sgd(s, *cpu_backend()), Error);
  s.momentum = 0;
  s.nesterov = true;
  EXPECT_THROW(optim::make_sgd(s, *cpu_backend()), Error);
  optim::AdamWOptions a;
  a.beta1 = 1.0f;
  EXPECT_THROW(optim::make_adamw(a, *cpu_backend()), Error);
  optim::LarsOptions l;
  l.trust_coefficient = 0.0f;
  EXPECT_THROW(optim::make_lars(l, *cpu_backend()), Error);
  optim::LambOptions b;
  b.eps = 0.0f;
  EXPECT_THROW(optim::make_lamb(b, *cpu_backend()), Error);
  optim::LrScheduleOptions poly;
  poly.kind = optim::LrScheduleKind::poly;
  poly.total_steps = 10;
  poly.power = 0.0f;
  EXPECT_THROW(optim::LrSchedule{poly}, Error);
  poly.power = 2.0f;
  poly.warmup_steps = 10;
  EXPECT_THROW(optim::LrSchedule{poly}, Error);
  try {
    optim::parse_lr_schedule_kind("exponential");
    ADD_FAILURE() << "unknown schedule accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown learning-rate schedule 'exponential'"), std::string::npos);
  }
}

TEST(Optimizer, LengthMismatchIsAClearError) {
  auto opt = optim::make_sgd({}, *cpu_backend());
  Tensor p = Tensor::zeros({4}), g = Tensor::zeros({5});
  EXPECT_THROW(opt->step(p, g, 0.1f), Error);
}

// Layer-major tensors as a model lays them out: weight, bias, weight, bias.
std::vector<optim::ParameterTensor> two_layers() {
  return {{"1.weight", 0, 20}, {"1.bias", 20, 5}, {"0.weight", 25, 8}, {"0.bias", 33, 4}};
}

TEST(UpdateRanges, TensorsWithEqualOptionsShareOneLaunch) {
  optim::UpdateRanges all(two_layers(), {});
  const auto& one = all.of(37);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].offset, 0);
  EXPECT_EQ(one[0].count, 37);
  EXPECT_TRUE(one[0].options.weight_decay);
  // No tensor is a normalization layer's: still one range.
  EXPECT_EQ(optim::UpdateRanges(two_layers(), {optim::NoDecayCategory::norm}).of(37).size(), 1u);
}

TEST(UpdateRanges, NoDecayOnBiasesSplitsWhereTheOptionsChange) {
  // Given out of order, with neighbouring biases and a normalization layer's scale.
  std::vector<optim::ParameterTensor> t = {{"fc.bias", 30, 2},   {"fc.weight", 0, 10},      {"bn.weight", 10, 4, true},
                                           {"bn.bias", 14, 4, true}, {"conv.bias", 18, 12}};
  optim::UpdateRanges r(t, {optim::NoDecayCategory::bias});
  const auto& ranges = r.of(32);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].offset, 0);
  EXPECT_EQ(ranges[0].count, 14);
  EXPECT_TRUE(ranges[0].options.weight_decay);
  EXPECT_EQ(ranges[1].offset, 14);
  EXPECT_EQ(ranges[1].count, 18);
  EXPECT_FALSE(ranges[1].options.weight_decay);
  const auto& both = optim::UpdateRanges(t, {optim::NoDecayCategory::bias, optim::NoDecayCategory::norm}).of(32);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].offset, 10);
  EXPECT_EQ(both[1].count, 22);
}

TEST(UpdateRanges, EmbeddingsAreTheTensorsMarkedSo) {
  const std::vector<optim::NoDecayCategory> embedding = {optim::NoDecayCategory::embedding};
  EXPECT_FALSE(optim::tensor_options({"class_token", 0, 1, false, true}, embedding).weight_decay);
  EXPECT_TRUE(optim::tensor_options({"class_token", 0, 1, false, false}, embedding).weight_decay);
  EXPECT_TRUE(optim::tensor_options({"encoder.pos_embedding", 0, 1, false, true}, {optim::NoDecayCategory::bias})
                  .weight_decay);
  EXPECT_EQ(optim::parse_no_decay_category("embedding"), optim::NoDecayCategory::embedding);
  EXPECT_EQ(optim::no_decay_category_name(optim::NoDecayCategory::embedding), "embedding");
}

TEST(UpdateRanges, BiasIsTheNamesLastComponent) {
  const std::vector<optim::NoDecayCategory> bias = {optim::NoDecayCategory::bias};
  EXPECT_FALSE(optim::tensor_options({"layer1.0.bn1.bias", 0, 1}, bias).weight_decay);
  EXPECT_FALSE(optim::tensor_options({"bias", 0, 1}, bias).weight_decay);
  EXPECT_TRUE(optim::tensor_options({"bias.weight", 0, 1}, bias).weight_decay);
  EXPECT_TRUE(optim::tensor_options({"lstm.bias_hh", 0, 1}, bias).weight_decay);
  EXPECT_TRUE(optim::tensor_options({"0.bias", 0, 1}, {}).weight_decay);
}

TEST(UpdateRanges, TensorsThatDoNotTileTheBufferAreClearErrors) {
  auto t = two_layers();
  t[2].offset = 26;  // a gap before 0.weight
  EXPECT_THROW(optim::UpdateRanges(t, {}), Error);
  t[2].offset = 24;  // overlapping 1.bias
  EXPECT_THROW(optim::UpdateRanges(t, {}), Error);
  optim::UpdateRanges r(two_layers(), {});
  EXPECT_THROW(r.of(38), Error);
  EXPECT_THROW(optim::make_sgd({}, *cpu_backend(), {}, {optim::NoDecayCategory::bias}), Error);
  try {
    optim::parse_no_decay_category("weights");
    ADD_FAILURE() << "unknown category accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer.no_decay: 'weights' is not one of bias, norm, embedding"), std::string::npos);
  }
}

// The tensors with equal options are the same single launch as the whole buffer: bitwise equal.
TEST(UpdateRanges, TensorsWithoutNoDecayUpdateBitwiseAsOneBuffer) {
  ReferenceFile f(kFile);
  const Tensor p0 = f.dataset("optim/sgd_momentum_wd/p0"), grads = f.dataset("optim/sgd_momentum_wd/grads");
  const int64_t n = p0.numel();
  ASSERT_EQ(n, 37);
  optim::SgdOptions s;
  s.weight_decay = 0.1f;
  optim::AdamWOptions a;
  a.weight_decay = 0.05f;
  std::unique_ptr<optim::Optimizer> pairs[][2] = {
      {optim::make_sgd(s, *cpu_backend()), optim::make_sgd(s, *cpu_backend(), two_layers())},
      {optim::make_adamw(a, *cpu_backend()), optim::make_adamw(a, *cpu_backend(), two_layers())}};
  for (auto& pair : pairs) {
    Tensor whole = p0.clone(), split = p0.clone();
    for (int64_t step = 0; step < 3; ++step) {
      pair[0]->step(whole, grads.view(step * n, {n}), 0.1f);
      pair[1]->step(split, grads.view(step * n, {n}), 0.1f);
    }
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(whole.data<float>()[i], split.data<float>()[i]) << pair[0]->name() << " i " << i;
  }
}

TEST(LinearScaling, ScalesWithGlobalBatch) {
  EXPECT_FLOAT_EQ(optim::linear_scaled_lr(0.1f, 1024, 256), 0.4f);
  EXPECT_THROW(optim::linear_scaled_lr(0.1f, 1024, 0), Error);
}

}  // namespace

// LARS and LAMB (their rules are checked against NumPy in tests/large_batch.cmake): which tensors
// take the trust ratio and weight decay, and fp16's scaled gradients unscaled before the norms.
TEST(TrustRatio, BiasesAndNormalizationParametersAreExcluded) {
  const std::vector<optim::NoDecayCategory> none;
  EXPECT_TRUE(optim::trust_flags({"layer1.0.conv1.weight", 0, 1}, true, none).adapted);
  EXPECT_TRUE(optim::trust_flags({"layer1.0.conv1.weight", 0, 1}, true, none).decayed);
  for (const optim::ParameterTensor& t : {optim::ParameterTensor{"fc.bias", 0, 1},
                                          optim::ParameterTensor{"layer1.0.bn1.weight", 0, 1, true}}) {
    EXPECT_FALSE(optim::trust_flags(t, true, none).adapted) << t.name;
    EXPECT_FALSE(optim::trust_flags(t, true, none).decayed) << t.name;
    EXPECT_TRUE(optim::trust_flags(t, false, none).adapted) << t.name;
    EXPECT_TRUE(optim::trust_flags(t, false, none).decayed) << t.name;
  }
  // optimizer.no_decay still takes the decay off an adapted tensor.
  const optim::TrustFlags e =
      optim::trust_flags({"class_token", 0, 1, false, true}, true, {optim::NoDecayCategory::embedding});
  EXPECT_TRUE(e.adapted);
  EXPECT_FALSE(e.decayed);
}

class TrustRatioUnscale : public ::testing::TestWithParam<std::string> {};

TEST_P(TrustRatioUnscale, ScaledGradientsGiveTheUnscaledUpdate) {
  const std::vector<optim::ParameterTensor> tensors = {{"0.weight", 0, 24}, {"0.bias", 24, 6}, {"1.weight", 30, 10}};
  const auto make = [&] {
    if (GetParam() == "lars") {
      optim::LarsOptions o;
      o.weight_decay = 0.01f;
      return optim::make_lars(o, *cpu_backend(), tensors);
    }
    return optim::make_lamb(optim::LambOptions{}, *cpu_backend(), tensors);
  };
  Tensor p0({40}, DType::f32), g({40}, DType::f32), scaled({40}, DType::f32);
  for (int64_t i = 0; i < 40; ++i) {
    p0.data<float>()[i] = std::sin(0.7f * static_cast<float>(i));
    g.data<float>()[i] = 0.1f * std::cos(1.3f * static_cast<float>(i));
    scaled.data<float>()[i] = g.data<float>()[i] * 1024.0f;
  }
  auto plain = make(), fp16 = make();
  Tensor a = p0.clone(), b = p0.clone();
  plain->step(a, g, 0.5f);
  kernels::StepState s;
  kernels::StepRules rules;
  rules.lr.base_lr = 0.5;
  std::tie(rules.beta1, rules.beta2) = fp16->bias_correction_betas();
  s.loss_scale = 1024.0;
  const double clean[2] = {0.0, 0.0};
  kernels::DecideStep{&s, clean, kernels::VerdictLayout{0}, rules}(0);
  fp16->step_on_device(b, scaled, &s, true, nullptr);
  for (int64_t i = 0; i < 40; ++i) {
    EXPECT_NE(a.data<float>()[i], p0.data<float>()[i]) << i;
    EXPECT_NEAR(b.data<float>()[i], a.data<float>()[i], 1e-6f) << GetParam() << " element " << i;
  }
  // A skipped step leaves the parameters as they are.
  s.skip = 1;
  Tensor c = b.clone();
  fp16->step_on_device(c, scaled, &s, true, nullptr);
  for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(c.data<float>()[i], b.data<float>()[i]) << i;
}

INSTANTIATE_TEST_SUITE_P(Optimizers, TrustRatioUnscale, ::testing::Values("lars", "lamb"),
                         [](const auto& info) { return info.param; });
