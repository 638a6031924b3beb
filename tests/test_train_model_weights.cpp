// Weights from a model.h5 into a built model (train/model_weights.hpp) and the metrics of evaluation
// records (train/split_evaluation.hpp): parameters and f32/i64 buffers come back by name; a classifier
// of another class count keeps the model's values only where allowed; every mismatch is listed in
// one error; records give top-1, top-k, the loss and the confusion matrix, each sample exactly once.
#include <gtest/gtest.h>

#include <filesystem>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/model.hpp"
#include "scaletrain/train/checkpoint.hpp"
#include "scaletrain/train/model_weights.hpp"
#include "scaletrain/train/split_evaluation.hpp"
#include "support/tracking_layer.hpp"

using namespace scaletrain;

namespace {

// hidden (Dense 6) -> bn (buffers) -> fc (Dense `classes`), on [4] inputs; `hidden` names the first layer.
std::unique_ptr<nn::Model> toy(int64_t classes, const std::string& hidden = "hidden") {
  auto m = std::make_unique<nn::Model>("toy", nn::ParameterNaming::node);
  m->emplace<nn::Dense>(hidden, 6);
  m->emplace<scaletrain::testing::TrackingLayer>("bn");
  m->emplace<nn::Dense>("fc", classes);
  m->configure({4});
  return m;
}

std::unique_ptr<Backend> cpu_backend() {
  BackendOptions o;
  o.kind = DeviceKind::cpu;
  o.threads = 1;
  return make_backend(o);
}

// model.h5 of `m` with parameters i * scale and buffers 1.5, 2.5, ... and 77 in `dir`.
std::string write_model_file(const nn::Model& m, float scale, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("scaletrain-weights-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  train::CheckpointState s;
  for (int64_t i = 0; i < m.parameter_count(); ++i) s.parameters.push_back(scale * static_cast<float>(i));
  for (int64_t i = 0; i < 6; ++i) s.buffers_f32.push_back(1.5f + static_cast<float>(i));
  s.buffers_i64 = {77};
  train::write_checkpoint_file(dir.string(), train::kCheckpointModelFile, m, s);
  return (dir / train::kCheckpointModelFile).string();
}

std::vector<float> values(Backend& b, const Tensor& t) {
  const Tensor h = b.download(t);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

std::string load_error(Backend& b, nn::Model& m, const train::ModelWeights& w, int64_t classes, bool new_classifier) {
  try {
    train::load_model_weights(b, m, w, classes, new_classifier, "run.init_from =");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelWeights, ParametersAndBuffersComeBackByName) {
  auto backend = cpu_backend();
  auto written = toy(3);
  const std::string file = write_model_file(*written, 0.25f, "same");
  auto m = toy(3);
  m->build(*backend, 2, DType::f32);
  const train::WeightsFit fit =
      train::load_model_weights(*backend, *m, train::read_model_weights(file), 3, false, "run.evaluate_only =");
  EXPECT_EQ(fit.kept.size(), 6u);  // 4 parameters, 2 buffers
  EXPECT_TRUE(fit.reinitialized.empty());
  const std::vector<float> p = values(*backend, m->flat_parameters());
  for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(p[i], 0.25f * static_cast<float>(i)) << i;
  EXPECT_EQ(values(*backend, m->flat_buffers(DType::f32)), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
  const Tensor i64 = backend->download(m->flat_buffers(DType::i64));
  EXPECT_EQ(i64.data<int64_t>()[0], 77);
}

TEST(ModelWeights, AClassifierOfAnotherClassCountIsReinitializedOnlyWhereAllowed) {
  auto backend = cpu_backend();
  const std::string file = write_model_file(*toy(5), 1.0f, "classes");
  const train::ModelWeights w = train::read_model_weights(file);
  auto m = toy(3);
  m->build(*backend, 2, DType::f32);
  m->init_parameters(7);
  const std::vector<float> fresh = values(*backend, m->flat_parameters());
  const std::string refused = load_error(*backend, *m, w, 3, false);
  EXPECT_NE(refused.find("2 mismatch(es)"), std::string::npos) << refused;
  EXPECT_NE(refused.find("wrong shape: fc.weight: file [5, 6], model expects [3, 6]"), std::string::npos) << refused;
  EXPECT_NE(refused.find("wrong shape: fc.bias: file [5], model expects [3]"), std::string::npos) << refused;

  const train::WeightsFit fit = train::load_model_weights(*backend, *m, w, 3, true, "run.init_from =");
  EXPECT_EQ(fit.reinitialized, (std::vector<std::string>{"fc.weight: file [5, 6], model [3, 6]",
                                                         "fc.bias: file [5], model [3]"}));
  EXPECT_EQ(fit.kept.size(), 4u);
  const std::vector<float> p = values(*backend, m->flat_parameters());
  for (const nn::ParameterSlot& s : m->slots())
    for (int64_t i = s.offset; i < s.offset + s.count; ++i)
      ASSERT_EQ(p[static_cast<size_t>(i)], s.name.starts_with("fc.") ? fresh[static_cast<size_t>(i)] : p[static_cast<size_t>(i)])
          << s.name;
  EXPECT_NE(p, fresh);  // the hidden layer came from the file
}

TEST(ModelWeights, EveryMismatchIsListedInOneError) {
  auto backend = cpu_backend();
  const train::ModelWeights w = train::read_model_weights(write_model_file(*toy(3, "first"), 1.0f, "names"));
  auto m = toy(4);
  m->build(*backend, 2, DType::f32);
  const std::string e = load_error(*backend, *m, w, 4, false);
  for (const char* want : {"6 mismatch(es)", "missing: hidden.weight [6, 4]", "missing: hidden.bias [6]",
                           "unexpected: first.weight [6, 4]", "unexpected: first.bias [6]",
                           "wrong shape: fc.weight: file [3, 6], model expects [4, 6]",
                           "wrong shape: fc.bias: file [3], model expects [4]"})
    EXPECT_NE(e.find(want), std::string::npos) << want << " in: " << e;
  EXPECT_NE(e.find("run.init_from = "), std::string::npos) << e;
  EXPECT_NE(e.find(" does not fit model toy (4 classes)"), std::string::npos) << e;
}

TEST(SplitEvaluation, RecordsGiveTopKLossAndConfusion) {
  // 3 classes: top_k is 3. Labels 0, 1, 2, 1; predictions 0, 2, 2, 1; label ranks 0, 1, 0, 0.
  const std::vector<train::SampleRecord> r = {
      {0, 0, 0, 0, 0.5f}, {1, 1, 2, 1, 1.5f}, {2, 2, 2, 0, 0.25f}, {3, 1, 1, 0, 0.75f}};
  const train::EvaluationMetrics m = train::summarize_records(r, 3);
  EXPECT_EQ(m.samples, 4);
  EXPECT_EQ(m.top1_correct, 3);
  EXPECT_EQ(m.top_k, 3);
  EXPECT_EQ(m.topk_correct, 4);
  EXPECT_DOUBLE_EQ(m.loss, 0.75);
  EXPECT_EQ(m.class_samples, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(m.class_correct, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(m.confusion, (std::vector<std::vector<int64_t>>{{1, 0, 0}, {0, 1, 1}, {0, 0, 1}}));
  EXPECT_EQ(train::evaluation_json(m, {"a", "b", "c"})["per_class"][1]["accuracy"], 0.5);
}

TEST(SplitEvaluation, ASampleTwiceOrMissingIsAnError) {
  EXPECT_THROW(train::summarize_records({{0, 0, 0, 0, 0.f}, {0, 0, 0, 0, 0.f}}, 2), Error);
  EXPECT_THROW(train::summarize_records({{0, 0, 0, 0, 0.f}, {2, 0, 0, 0, 0.f}}, 2), Error);
  EXPECT_THROW(train::summarize_records({{0, 0, 5, 0, 0.f}}, 2), Error);
}

}  // namespace
