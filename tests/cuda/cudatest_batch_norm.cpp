// GPU test (issue 40): BatchNorm2d, the option-A shortcut SubsamplePad and the zoo's resnet20 on the CUDA
// backend against the CPU backend, from the same inputs and the same initialized weights.
//  - BatchNorm2d, with and without its fused ReLU, in f32, bf16 and f16, on three shapes (a [C] input of
//    6 rows; 252 rows in one row block; 8192 rows in 64 row blocks, channels in packs of 8):
//    the training forward's output, the running statistics and num_batches_tracked after it, backward's
//    dx and the weight and bias gradients, then the evaluation forward (running statistics).
//    In f32 and f16 the CUDA backend runs cuDNN's spatial batch normalization (the layer names it as its
//    implementation); in bf16 it runs the same kernels/batch_norm.hpp functors as the CPU backend (its
//    sums on the device's own reduction plan).
//    cuDNN sums in its own order and may take the variance in one pass, so f32 holds to a few f32 ulps
//    of the statistics (rtol 1e-4); in bf16 and f16 the same f32 values are rounded to the storage type,
//    where such an ulp can land on the neighbouring value: one ulp of bf16 (<= 2^-7 relative) or a few of
//    f16 (cuDNN's f16 arithmetic: <= 2^-8). The statistics, the running buffers and the parameter
//    gradients are f32 in every compute type and hold to 1e-4 relative; the gradient sums over `rows`
//    terms get an absolute 1e-6 per row. The inputs keep every normalized value at least 1e-3 from zero
//    (see batch_norm_inputs), so that a fused ReLU's mask cannot flip on an ulp.
//  - SubsamplePad copies values, so forward and backward agree bitwise, in f32, bf16 and f16.
//  - resnet20 on 32x32x3, batch 8, 10 classes, f32 (TF32 off, deterministic algorithms: the CudaTest
//    backend's defaults): one training step (forward with batch statistics, softmax cross-entropy,
//    backward) and one evaluation forward. cuDNN's convolutions sum in another order than oneDNN's (and
//    may pick Winograd or FFT algorithms), so the two differ by f32 rounding that grows through 19
//    convolutions: about 1e-6 to 1e-5 relative. Logits, loss and running statistics are continuous in it
//    (elementwise rtol 1e-3, atol 1e-4 of the tensor's largest value; the mean loss within 1e-4 relative).
//    The gradients are not: among the 1.5 million ReLU inputs of a step, about one sits within that
//    rounding of zero, and its mask flip moves one output channel's weight gradient by ~1% (one of the
//    512 to 8192 rows that channel's BatchNorm sums). So gradients are held by norm: the flat gradient
//    within 1e-3 (a flip moves it by ~2e-4), every parameter tensor within 2e-2 (a flip: <= ~5e-3); a wrong
//    kernel misses by O(1). The worst ratios are printed for calibration on the GPU.
// Without a CUDA device every test reports itself skipped (cuda_test_support.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "scaletrain/nn/subsample_pad.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/layer_harness.hpp"

namespace scaletrain::testing {
namespace {

// `v` rounded to `dtype` and back (f32: unchanged).
float rounded(float v, DType dtype) {
  if (dtype == DType::bf16) return to_float(from_float<bf16>(v));
  if (dtype == DType::f16) return to_float(from_float<f16>(v));
  return v;
}

// A device tensor of `shape` stored in `dtype` holding `values` (rounded to it); the copy has finished.
Tensor device_tensor(Backend& backend, const Shape& shape, DType dtype, const std::vector<float>& values) {
  Tensor host(shape, dtype, "host input");
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::f32)
      host.data<float>()[i] = values[i];
    else if (dtype == DType::bf16)
      host.data<bf16>()[i] = from_float<bf16>(values[i]);
    else
      host.data<f16>()[i] = from_float<f16>(values[i]);
  }
  Tensor d = backend.empty(shape, dtype, "input");
  backend.copy_async(backend.compute_stream(), d, host);
  backend.compute_stream().synchronize();
  return d;
}

// A device tensor's values (f32, bf16 or f16) as floats.
std::vector<float> floats_of(Backend& backend, const Tensor& t) {
  const Tensor h = backend.download(t);
  std::vector<float> v(static_cast<size_t>(h.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (h.dtype() == DType::f32)
      v[i] = h.data<float>()[i];
    else if (h.dtype() == DType::bf16)
      v[i] = to_float(h.data<bf16>()[i]);
    else
      v[i] = to_float(h.data<f16>()[i]);
  }
  return v;
}

// A device tensor's bytes, for bitwise comparisons.
std::vector<unsigned char> bytes_of(Backend& backend, const Tensor& t) {
  const Tensor h = backend.download(t);
  std::vector<unsigned char> b(static_cast<size_t>(h.numel()) * dtype_size(h.dtype()));
  if (!b.empty()) std::memcpy(b.data(), h.raw(), b.size());
  return b;
}

std::vector<int64_t> i64_of(Backend& backend, const Tensor& t) {
  const Tensor h = backend.download(t);
  return std::vector<int64_t>(h.data<int64_t>(), h.data<int64_t>() + h.numel());
}

// Max |a - b| / (atol + rtol * |b|): <= 1 passes (tensors_close's measure, for the printed margins).
double worst_ratio(const float* a, const float* b, int64_t n, double rtol, double atol) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(a[i]) - b[i]) / (atol + rtol * std::fabs(static_cast<double>(b[i])));
    worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(worst, err);
  }
  return worst;
}

double max_abs(const float* v, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(v[i])));
  return m;
}

// ||a - b|| / ||b|| (0 where both are zero).
double norm_rel(const float* a, const float* b, int64_t n) {
  double d = 0, r = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = static_cast<double>(a[i]) - b[i];
    d += e * e;
    r += static_cast<double>(b[i]) * b[i];
  }
  return r > 0 ? std::sqrt(d / r) : (d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}

// ---------------------------------------------------------------------------------------------------
// BatchNorm2d

struct BnShape {
  std::string name;
  Shape sample;  // [..., C]
  int64_t batch;
};

const std::vector<BnShape>& bn_shapes() {
  static const std::vector<BnShape> all = {
      {"flat_6x5", {5}, 6},                  // 6 rows: one block, a pass, 5 channels (no packs)
      {"image_4x7x9x12", {7, 9, 12}, 4},     // 252 rows: one block of 16 lanes, 12 channels (no packs)
      {"image_8x32x32x16", {32, 32, 16}, 8}, // 8192 rows: 64 row blocks and a second pass, packs of 8
  };
  return all;
}

// The weight, bias and running statistics every backend starts from, and the input and output gradient.
struct BnInputs {
  std::vector<float> weight, bias, running_mean, running_var;
  std::vector<float> x, dy;  // already rounded to the compute type
};

// x per channel around its own offset, then nudged (and rounded again) until every normalized value
// (x - mean) / sqrt(var + eps) * weight + bias, computed in double from the stored values, is at least
// 1e-3 from zero: both backends then see the same sign wherever they differ by f32 rounding, and the
// fused ReLU's mask is the same on both.
BnInputs batch_norm_inputs(const BnShape& s, DType dtype) {
  const int64_t c = s.sample.back();
  int64_t n = s.batch;
  for (int64_t d : s.sample) n *= d;
  const int64_t rows = n / c;
  std::mt19937 rng(static_cast<uint32_t>(n * 31 + c));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  BnInputs in;
  for (int64_t k = 0; k < c; ++k) {
    in.weight.push_back(1.0f + 0.5f * u(rng));
    in.bias.push_back(0.3f * u(rng));
    in.running_mean.push_back(0.5f * u(rng));
    in.running_var.push_back(1.0f + 0.5f * u(rng));
  }
  in.x.resize(static_cast<size_t>(n));
  in.dy.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float offset = 0.25f * static_cast<float>(i % c % 5) - 0.5f;
    in.x[static_cast<size_t>(i)] = rounded(offset + 1.5f * normal(rng), dtype);
    in.dy[static_cast<size_t>(i)] = rounded(0.5f * normal(rng), dtype);
  }
  for (int pass = 0; pass < 20; ++pass) {
    std::vector<double> mean(static_cast<size_t>(c), 0.0), var(static_cast<size_t>(c), 0.0);
    for (int64_t i = 0; i < n; ++i) mean[static_cast<size_t>(i % c)] += in.x[static_cast<size_t>(i)];
    for (double& m : mean) m /= static_cast<double>(rows);
    for (int64_t i = 0; i < n; ++i) {
      const double d = in.x[static_cast<size_t>(i)] - mean[static_cast<size_t>(i % c)];
      var[static_cast<size_t>(i % c)] += d * d;
    }
    for (double& v : var) v /= static_cast<double>(rows);
    int nudged = 0;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i % c);
      const double y = (in.x[static_cast<size_t>(i)] - mean[k]) / std::sqrt(var[k] + 1e-5) * in.weight[k] + in.bias[k];
      if (std::fabs(y) >= 1e-3) continue;
      // Past the zero by about 0.02 of the spread: more than an ulp of x in every type.
      const float step = static_cast<float>(0.02 * std::sqrt(var[k]) * (y < 0 ? -1.0 : 1.0) / in.weight[k]);
      float& x = in.x[static_cast<size_t>(i)];
      const float before = x;
      x = rounded(x + step, dtype);
      if (x == before) x = rounded(x + 4.0f * step, dtype);
      ++nudged;
    }
    if (nudged == 0) return in;
  }
  ADD_FAILURE() << s.name << ": the inputs still have a normalized value within 1e-3 of zero";
  return in;
}

struct BnRun {
  std::string implementation;
  std::vector<float> y, dx, grads, buffers, y_eval;
  std::vector<int64_t> tracked;
  std::vector<nn::ParameterSlot> slots;
  std::vector<nn::BufferSlot> buffer_slots;
};

constexpr int64_t kTrackedBefore = 5;

// A BatchNorm2d alone in a model (its parameters and buffers bound to the flat buffers as in training),
// set to `in`; one training forward and backward, then one evaluation forward.
BnRun run_batch_norm(Backend& backend, const BnShape& s, Activation act, DType dtype, const BnInputs& in) {
  nn::Model m("bn", nn::ParameterNaming::node);
  m.node<nn::BatchNorm2d>({nn::Model::input()}, "bn", act);
  m.configure(s.sample);
  m.build(backend, s.batch, dtype);
  m.init_parameters(1);
  std::vector<float> params(static_cast<size_t>(m.parameter_count()));
  for (const nn::ParameterSlot& p : m.slots()) {
    const std::vector<float>& v = p.name == "bn.weight" ? in.weight : in.bias;
    std::copy(v.begin(), v.end(), params.begin() + p.offset);
  }
  backend.upload(m.flat_parameters(), params);
  m.refresh_compute_parameters();
  std::vector<float> buffers(static_cast<size_t>(m.flat_buffers(DType::f32).numel()));
  for (const nn::BufferSlot& b : m.buffer_slots()) {
    if (b.dtype != DType::f32) continue;
    const std::vector<float>& v = b.name == "bn.running_mean" ? in.running_mean : in.running_var;
    std::copy(v.begin(), v.end(), buffers.begin() + b.offset);
  }
  backend.upload(m.flat_buffers(DType::f32), buffers);
  Tensor tracked({1}, DType::i64, "num_batches_tracked (host)");
  tracked.data<int64_t>()[0] = kTrackedBefore;
  backend.copy_async(backend.compute_stream(), m.flat_buffers(DType::i64), tracked);
  backend.compute_stream().synchronize();

  const Shape xs = nn::with_batch(s.batch, s.sample);
  const Tensor x = device_tensor(backend, xs, dtype, in.x);
  const Tensor dy = device_tensor(backend, xs, dtype, in.dy);
  nn::Layer& bn = *m.layers().at(0);
  BnRun r;
  r.implementation = bn.implementation();
  r.y = floats_of(backend, bn.forward(x, true));
  r.dx = floats_of(backend, bn.backward(dy, true));
  r.grads = floats_of(backend, m.flat_gradients());
  r.buffers = floats_of(backend, m.flat_buffers(DType::f32));
  r.tracked = i64_of(backend, m.flat_buffers(DType::i64));
  r.y_eval = floats_of(backend, bn.forward(x, false));
  r.slots = m.slots();
  r.buffer_slots = m.buffer_slots();
  return r;
}

class CudaBatchNorm : public CudaTest, public ::testing::WithParamInterface<std::tuple<DType, Activation>> {};

TEST_P(CudaBatchNorm, TrainingStepAndEvaluationMatchTheCpuBackend) {
  const auto [dtype, act] = GetParam();
  // Values stored in the compute type (y, dx, the evaluation's y); see the header for why.
  const double rtol = dtype == DType::f32 ? 1e-4 : (dtype == DType::bf16 ? 1e-2 : 4e-3);
  const double atol = dtype == DType::f32 ? 1e-5 : (dtype == DType::bf16 ? 1e-3 : 2e-4);
  auto cpu = make_cpu_backend(1);
  for (const BnShape& s : bn_shapes()) {
    SCOPED_TRACE(s.name + " in " + std::string(dtype_name(dtype)) + ", activation " + activation_name(act));
    const BnInputs in = batch_norm_inputs(s, dtype);
    const BnRun want = run_batch_norm(*cpu, s, act, dtype, in);
    const BnRun got = run_batch_norm(*backend, s, act, dtype, in);
    EXPECT_EQ(want.implementation, "") << "the CPU backend runs the layer's kernels";
    if (dtype == DType::bf16)
      EXPECT_EQ(got.implementation, "") << "bf16 runs the layer's kernels on CUDA";
    else
      EXPECT_TRUE(got.implementation.rfind("cuDNN batch normalization", 0) == 0) << got.implementation;
    const int64_t n = static_cast<int64_t>(want.y.size());
    const double rows = static_cast<double>(n / s.sample.back());
    ASSERT_EQ(got.y.size(), want.y.size());
    EXPECT_TRUE(tensors_close(got.y.data(), want.y.data(), n, rtol, atol)) << "training output";
    ASSERT_EQ(got.dx.size(), want.dx.size());
    EXPECT_TRUE(tensors_close(got.dx.data(), want.dx.data(), n, rtol, atol)) << "dx";
    ASSERT_EQ(got.grads.size(), want.grads.size());
    for (const nn::ParameterSlot& p : want.slots)
      EXPECT_TRUE(tensors_close(got.grads.data() + p.offset, want.grads.data() + p.offset, p.count, 1e-4, 1e-6 * rows))
          << "gradient of " << p.name;
    ASSERT_EQ(got.buffers.size(), want.buffers.size());
    for (const nn::BufferSlot& b : want.buffer_slots) {
      if (b.dtype != DType::f32) continue;
      EXPECT_TRUE(tensors_close(got.buffers.data() + b.offset, want.buffers.data() + b.offset, b.count, 1e-4, 1e-6))
          << b.name << " after the step";
    }
    EXPECT_EQ(got.tracked, (std::vector<int64_t>{kTrackedBefore + 1})) << "num_batches_tracked";
    EXPECT_EQ(want.tracked, (std::vector<int64_t>{kTrackedBefore + 1})) << "num_batches_tracked on cpu";
    ASSERT_EQ(got.y_eval.size(), want.y_eval.size());
    EXPECT_TRUE(tensors_close(got.y_eval.data(), want.y_eval.data(), n, rtol, atol)) << "evaluation output";
    if (act == Activation::relu) {
      // The ReLU did something: some outputs are clamped, some are not.
      const auto zeros = std::count(want.y.begin(), want.y.end(), 0.0f);
      EXPECT_GT(zeros, 0);
      EXPECT_LT(zeros, n);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaBatchNorm,
                         ::testing::Combine(::testing::Values(DType::f32, DType::bf16, DType::f16),
                                            ::testing::Values(Activation::none, Activation::relu)),
                         [](const auto& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  activation_name(std::get<1>(info.param));
                         });

// ---------------------------------------------------------------------------------------------------
// SubsamplePad

struct SubsampleCase {
  std::string name;
  Shape in;
  int64_t batch, stride, pad_before, pad_after;
};

class CudaSubsamplePad : public CudaTest, public ::testing::WithParamInterface<DType> {};

TEST_P(CudaSubsamplePad, ForwardAndBackwardMatchTheCpuBackendBitwise) {
  const DType dtype = GetParam();
  auto cpu = make_cpu_backend(1);
  const std::vector<SubsampleCase> cases = {
      {"resnet20_layer2_shortcut", {32, 32, 16}, 8, 2, 8, 8},
      {"resnet20_layer3_shortcut", {16, 16, 32}, 8, 2, 16, 16},
      {"odd_sizes_uneven_pads", {7, 9, 3}, 3, 2, 1, 2},
      {"stride3_pad_after_only", {6, 8, 5}, 2, 3, 0, 4},
  };
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const SubsampleCase& c : cases) {
    SCOPED_TRACE(c.name + " in " + std::string(dtype_name(dtype)));
    nn::SubsamplePad probe("shortcut", c.stride, c.pad_before, c.pad_after);
    const Shape out = probe.configure(c.in);
    const Shape xs = nn::with_batch(c.batch, c.in), ys = nn::with_batch(c.batch, out);
    std::vector<float> x(static_cast<size_t>(shape_numel(xs))), dy(static_cast<size_t>(shape_numel(ys)));
    for (float& v : x) v = u(rng);
    for (float& v : dy) v = u(rng);
    auto run = [&](Backend& backend) {
      nn::SubsamplePad layer("shortcut", c.stride, c.pad_before, c.pad_after);
      layer.configure(c.in);
      layer.attach(backend, dtype);
      layer.build(backend, c.batch);
      const Tensor xd = device_tensor(backend, xs, dtype, x);
      const Tensor dyd = device_tensor(backend, ys, dtype, dy);
      std::vector<unsigned char> y = bytes_of(backend, layer.forward(xd, true));
      std::vector<unsigned char> dx = bytes_of(backend, layer.backward(dyd, true));
      return std::make_pair(std::move(y), std::move(dx));
    };
    const auto want = run(*cpu);
    const auto got = run(*backend);
    ASSERT_EQ(want.first.size(), static_cast<size_t>(shape_numel(ys)) * dtype_size(dtype));
    EXPECT_TRUE(got.first == want.first) << "forward";
    ASSERT_EQ(want.second.size(), static_cast<size_t>(shape_numel(xs)) * dtype_size(dtype));
    EXPECT_TRUE(got.second == want.second) << "backward";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaSubsamplePad, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// ---------------------------------------------------------------------------------------------------
// resnet20

constexpr int64_t kResNetBatch = 8, kClasses = 10;

struct ResNetRun {
  std::vector<float> params, logits, grads, buffers, eval_logits;
  std::vector<int64_t> tracked;
  double loss = 0, eval_loss = 0;
  std::vector<nn::ParameterSlot> slots;
  std::vector<nn::BufferSlot> buffer_slots;
};

ResNetRun run_resnet20(Backend& backend, const std::vector<float>& x, const std::vector<int32_t>& labels) {
  auto m = nn::make_zoo_model("resnet20", {32, 32, 3}, kClasses);
  m->build(backend, kResNetBatch, DType::f32);
  m->init_parameters(17);
  ResNetRun r;
  r.params = floats_of(backend, m->flat_parameters());
  const Tensor xd = device_tensor(backend, {kResNetBatch, 32, 32, 3}, DType::f32, x);
  const Tensor ld = to_device<int32_t>(backend, labels, "labels");
  nn::SoftmaxCrossEntropy loss;
  loss.build(backend, kResNetBatch, kClasses);
  const Tensor& logits = m->forward(xd, true);
  r.loss = loss.forward_and_read(logits, ld).mean_loss();
  m->backward(loss.backward(1.0f / static_cast<float>(kResNetBatch)));
  r.logits = floats_of(backend, logits);
  r.grads = floats_of(backend, m->flat_gradients());
  r.buffers = floats_of(backend, m->flat_buffers(DType::f32));
  r.tracked = i64_of(backend, m->flat_buffers(DType::i64));
  const Tensor& eval_logits = m->forward(xd, false);
  r.eval_loss = loss.forward_and_read(eval_logits, ld).mean_loss();
  r.eval_logits = floats_of(backend, eval_logits);
  r.slots = m->slots();
  r.buffer_slots = m->buffer_slots();
  return r;
}

class CudaResNet20 : public CudaTest {};

TEST_F(CudaResNet20, TrainingStepAndEvaluationMatchTheCpuBackend) {
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(kClasses) - 1);
  std::vector<float> x(static_cast<size_t>(kResNetBatch * 32 * 32 * 3));
  for (float& v : x) v = normal(rng);
  std::vector<int32_t> labels(static_cast<size_t>(kResNetBatch));
  for (int32_t& l : labels) l = label(rng);

  auto cpu = make_cpu_backend();
  const ResNetRun want = run_resnet20(*cpu, x, labels);
  const ResNetRun got = run_resnet20(*backend, x, labels);
  // The same initialization on both (drawn on the host from the seed).
  ASSERT_EQ(got.params, want.params);

  // Logits (both passes) and running statistics: elementwise, atol relative to the tensor's largest value.
  const double rtol = 1e-3, atol = 1e-4;
  const int64_t nl = kResNetBatch * kClasses;
  ASSERT_EQ(static_cast<int64_t>(want.logits.size()), nl);
  ASSERT_EQ(got.logits.size(), want.logits.size());
  const double logits_ratio = worst_ratio(got.logits.data(), want.logits.data(), nl, rtol,
                                          atol * max_abs(want.logits.data(), nl));
  EXPECT_LE(logits_ratio, 1.0) << "training logits: "
                               << tensors_close(got.logits.data(), want.logits.data(), nl, rtol,
                                                atol * max_abs(want.logits.data(), nl))
                                      .message();
  ASSERT_EQ(got.eval_logits.size(), want.eval_logits.size());
  const double eval_ratio = worst_ratio(got.eval_logits.data(), want.eval_logits.data(), nl, rtol,
                                        atol * max_abs(want.eval_logits.data(), nl));
  EXPECT_LE(eval_ratio, 1.0) << "evaluation logits: "
                             << tensors_close(got.eval_logits.data(), want.eval_logits.data(), nl, rtol,
                                              atol * max_abs(want.eval_logits.data(), nl))
                                    .message();
  EXPECT_NEAR(got.loss, want.loss, 1e-4 * std::max(1.0, std::fabs(want.loss))) << "training loss";
  EXPECT_NEAR(got.eval_loss, want.eval_loss, 1e-4 * std::max(1.0, std::fabs(want.eval_loss))) << "evaluation loss";

  ASSERT_EQ(got.buffers.size(), want.buffers.size());
  double buffer_ratio = 0;
  for (const nn::BufferSlot& b : want.buffer_slots) {
    if (b.dtype != DType::f32) continue;
    const float* ref = want.buffers.data() + b.offset;
    const double a = 5e-5 * std::max(1.0, max_abs(ref, b.count));
    const double ratio = worst_ratio(got.buffers.data() + b.offset, ref, b.count, rtol, a);
    buffer_ratio = std::max(buffer_ratio, ratio);
    EXPECT_LE(ratio, 1.0) << b.name << " after the step: "
                          << tensors_close(got.buffers.data() + b.offset, ref, b.count, rtol, a).message();
  }
  // 19 BatchNorms, one step each.
  EXPECT_EQ(want.tracked, std::vector<int64_t>(19, 1));
  EXPECT_EQ(got.tracked, want.tracked);

  // Gradients by norm (header): the flat gradient, then every parameter tensor.
  ASSERT_EQ(got.grads.size(), want.grads.size());
  const double flat_rel = norm_rel(got.grads.data(), want.grads.data(), static_cast<int64_t>(want.grads.size()));
  EXPECT_LE(flat_rel, 1e-3) << "||cuda - cpu|| / ||cpu|| of the flat gradient";
  double worst_tensor = 0;
  std::string worst_name;
  for (const nn::ParameterSlot& p : want.slots) {
    const double rel = norm_rel(got.grads.data() + p.offset, want.grads.data() + p.offset, p.count);
    if (!(rel <= worst_tensor)) {
      worst_tensor = rel;
      worst_name = p.name;
    }
    EXPECT_LE(rel, 2e-2) << "||cuda - cpu|| / ||cpu|| of the gradient of " << p.name;
  }
  EXPECT_EQ(want.slots.size(), 59u);
  std::printf("resnet20 cuda vs cpu: logits %.3g, evaluation logits %.3g, buffers %.3g of the tolerance; "
              "loss %.9g vs %.9g; flat gradient %.3g, worst tensor %.3g (%s) relative by norm\n",
              logits_ratio, eval_ratio, buffer_ratio, got.loss, want.loss, flat_rel, worst_tensor, worst_name.c_str());
}

}  // namespace
}  // namespace scaletrain::testing
