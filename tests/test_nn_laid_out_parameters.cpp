// The convolutions' filters in their ops' own layout (nn/laid_out_parameters.hpp): on sim, whose
// convolutions take OHWI filters as cuDNN's do, the Model keeps every Conv2D's filters as an OHWI copy
// of the compute-type weights, rewritten by one launch, and training and evaluation (BatchNorm folded
// into the filters) give the cpu backend's results bit for bit; on cpu the ops read the compute copy.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/nn/model.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::backend_of;

namespace {

std::unique_ptr<nn::Model> built(Backend& backend, const std::string& name, DType compute, int64_t batch) {
  auto m = nn::make_zoo_model(name, {12, 12, 3}, 10);
  m->build(backend, batch, compute);
  m->init_parameters(7);
  return m;
}

// The model's parameters rounded to T, as floats.
template <class T>
std::vector<float> rounded(Backend& b, const nn::Parameter& p) {
  const Tensor master = b.download(p.value);
  std::vector<float> out(static_cast<size_t>(master.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = to_float(from_float<T>(master.data<float>()[i]));
  return out;
}

template <class T>
void expect_ohwi_copies(Backend& b, nn::Model& m, DType compute) {
  int64_t filters = 0, elements = 0;
  for (auto& layer : m.layers()) {
    for (const nn::Parameter& p : layer->parameters()) {
      if (p.shape.size() != 4) continue;
      SCOPED_TRACE(layer->name() + "." + p.name);
      ASSERT_EQ(p.op_layout, FilterLayout::ohwi);
      ASSERT_EQ(p.op_value.dtype(), compute);
      const int64_t o = p.shape[0], c = p.shape[1], kh = p.shape[2], kw = p.shape[3];
      ASSERT_EQ(p.op_value.shape(), (Shape{o, kh, kw, c}));
      const std::vector<float> want = rounded<T>(b, p);
      const Tensor got = b.download(p.op_value);
      for (int64_t oo = 0; oo < o; ++oo)
        for (int64_t h = 0; h < kh; ++h)
          for (int64_t w = 0; w < kw; ++w)
            for (int64_t cc = 0; cc < c; ++cc)
              ASSERT_EQ(to_float(got.data<T>()[((oo * kh + h) * kw + w) * c + cc]),
                        want[static_cast<size_t>(((oo * c + cc) * kh + h) * kw + w)])
                  << "[" << oo << ", " << cc << ", " << h << ", " << w << "]";
      ++filters;
      elements += p.value.numel();
    }
  }
  EXPECT_GT(filters, 0);
  EXPECT_EQ(m.laid_out_elements(), elements);
}

TEST(LaidOutParameters, SimConvolutionsReadOhwiCopiesOfTheComputeWeights) {
  auto sim = backend_of(DeviceKind::sim);
  for (DType compute : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(compute));
    auto m = built(*sim, "resnet20", compute, 2);
    if (compute == DType::f32)
      expect_ohwi_copies<float>(*sim, *m, compute);
    else
      expect_ohwi_copies<bf16>(*sim, *m, compute);
  }
}

// The copies follow the master weights in one launch, whatever changed them.
TEST(LaidOutParameters, OneLaunchRewritesEveryCopyFromTheMasterWeights) {
  auto sim = backend_of(DeviceKind::sim);
  auto m = built(*sim, "resnet20", DType::bf16, 2);
  std::vector<float> other(static_cast<size_t>(m->flat_parameters().numel()));
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 0.1f);
  for (float& v : other) v = d(rng);
  sim->upload(m->flat_parameters(), other);
  const DeviceCounts before = sim->counters().read();
  m->refresh_laid_out_parameters();
  sim->compute_stream().synchronize();
  EXPECT_EQ((sim->counters().read() - before).calls, 1);
  expect_ohwi_copies<bf16>(*sim, *m, DType::bf16);
}

TEST(LaidOutParameters, CpuConvolutionsReadTheComputeCopy) {
  auto cpu = backend_of(DeviceKind::cpu);
  auto m = built(*cpu, "resnet20", DType::f32, 2);
  EXPECT_EQ(m->laid_out_elements(), 0);
  for (auto& layer : m->layers())
    for (const nn::Parameter& p : layer->parameters()) {
      EXPECT_EQ(p.op_layout, FilterLayout::oihw);
      EXPECT_EQ(p.op_value.device_raw(), p.compute_value.device_raw()) << layer->name() << "." << p.name;
    }
}

TEST(LaidOutParameters, AnOpRefusesFiltersInALayoutItDoesNotCompute) {
  auto cpu = backend_of(DeviceKind::cpu);
  auto op = cpu->make_activated_conv(scaletrain::testing::conv_shape(1, 5, 5, 3, 4, 3, 1, 1), Activation::relu);
  EXPECT_EQ(op->filter_layout(), FilterLayout::oihw);
  try {
    op->take_filters_in(FilterLayout::ohwi);
    FAIL() << "an OIHW convolution took OHWI filters";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a convolution computing in OIHW was handed filters in OHWI, which it does "
                                         "not take"),
              std::string::npos)
        << e.what();
  }
}

// Training steps' forward and backward, and the evaluation forward with BatchNorm folded into the
// (OHWI) filters, give the cpu backend's logits and gradients bit for bit.
std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

TEST(LaidOutParameters, SimTrainsAndEvaluatesAsTheCpu) {
  auto cpu = backend_of(DeviceKind::cpu);
  auto sim = backend_of(DeviceKind::sim);
  const int64_t batch = 2;
  auto on_cpu = built(*cpu, "resnet20", DType::f32, batch);
  auto on_sim = built(*sim, "resnet20", DType::f32, batch);
  Tensor x({batch, 12, 12, 3});
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  Tensor x_sim = sim->empty(x.shape(), DType::f32, "x");
  sim->upload(x_sim, values(x));
  Tensor dlogits({batch, 10});
  for (int64_t i = 0; i < dlogits.numel(); ++i) dlogits.data<float>()[i] = 0.01f * static_cast<float>(i % 7 - 3);
  Tensor dlogits_sim = sim->empty(dlogits.shape(), DType::f32, "dlogits");
  sim->upload(dlogits_sim, values(dlogits));
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "evaluation");
    const std::vector<float> a = values(cpu->download(on_cpu->forward(x, training)));
    const std::vector<float> b = values(sim->download(on_sim->forward(x_sim, training)));
    EXPECT_EQ(a, b);
    if (!training) continue;
    on_cpu->backward(dlogits);
    on_sim->backward(dlogits_sim);
    EXPECT_EQ(values(cpu->download(on_cpu->flat_gradients())), values(sim->download(on_sim->flat_gradients())));
  }
}

}  // namespace
