// Every kernels/ functor launched on the CUDA backend's compute stream (a grid-stride kernel)
// against the same functor run by kernels::launch_host on the same inputs, in f32, bf16 and f16
// where it is templated over the storage type. Integer results, casts, copies and sums must be
// identical; results of multiply-adds, which nvcc contracts into FMAs, agree to 1e-6 (f32) or one
// unit in the last place (bf16, f16) relative to the largest value (expf/logf: 1e-5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/dropout.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/kernels/merge.hpp"
#include "scaletrain/kernels/normalize.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/softmax_cross_entropy.hpp"

using namespace scaletrain;
using namespace scaletrain::kernels;
using namespace scaletrain::testing;

namespace {

// The same values on the host (for launch_host) and on the device (for the CUDA launch).
template <class T>
struct Twin {
  std::vector<T> host;
  Tensor dev;
  Twin(Backend& b, std::vector<T> values, const std::string& name)
      : host(std::move(values)), dev(to_device(b, host, name)) {}
  T* h() { return host.data(); }
  T* d() const { return dev.device_data<T>(); }
  int64_t n() const { return static_cast<int64_t>(host.size()); }
};

template <class T>
std::vector<T> stored(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_float<T>(v[i]);
  return out;
}

std::vector<float> uniform(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

template <class T>
double ulp_tolerance() {
  if constexpr (std::is_same_v<T, bf16>) return 1.0 / 128;
  if constexpr (std::is_same_v<T, f16>) return 1.0 / 1024;
  return 1e-6;
}

// Device output `twin` against the host output: identical bytes when rtol is 0, else
// |device - host| <= rtol * max |host|.
template <class T>
void expect_matches(Backend& b, const Twin<T>& twin, double rtol, const std::string& what) {
  const std::vector<T> got = to_host<T>(b, twin.dev);
  ASSERT_EQ(got.size(), twin.host.size()) << what;
  if (rtol == 0) {
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(std::memcmp(&got[i], &twin.host[i], sizeof(T)), 0) << what << ": element " << i << " differs";
    return;
  }
  double scale = 0;
  for (const T& r : twin.host) scale = std::max(scale, std::fabs(static_cast<double>(to_float(r))));
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = to_float(got[i]), r = to_float(twin.host[i]);
    ASSERT_LE(std::fabs(g - r), rtol * scale) << what << ": element " << i << ": device " << g << ", host " << r;
  }
}

template <class T>
class CudaStorageFunctors : public CudaTest {};
using StorageTypes = ::testing::Types<float, bf16, f16>;
TYPED_TEST_SUITE(CudaStorageFunctors, StorageTypes);

class CudaFunctors : public CudaTest {};

TYPED_TEST(CudaStorageFunctors, ReluForwardAndBackward) {
  using T = TypeParam;
  Backend& b = *this->backend;
  const size_t n = 100003;
  Twin<T> x(b, stored<T>(uniform(n, -3, 3, 1)), "x"), dy(b, stored<T>(uniform(n, -1, 1, 2)), "dy");
  Twin<T> y(b, std::vector<T>(n), "y"), dx(b, std::vector<T>(n), "dx");
  launch_host("relu", x.n(), ReluForward<T>{x.h(), y.h()});
  launch(b.compute_stream(), "relu", x.n(), ReluForward<T>{x.d(), y.d()});
  launch_host("relu_bwd", x.n(), ReluBackward<T>{x.h(), dy.h(), dx.h()});
  launch(b.compute_stream(), "relu_bwd", x.n(), ReluBackward<T>{x.d(), dy.d(), dx.d()});
  Twin<T> dx_from_y(b, std::vector<T>(n), "dx from y");
  launch_host("relu_bwd_from_y", x.n(), ReluBackwardFromOutput<T>{y.h(), dy.h(), dx_from_y.h()});
  launch(b.compute_stream(), "relu_bwd_from_y", x.n(), ReluBackwardFromOutput<T>{y.d(), dy.d(), dx_from_y.d()});
  expect_matches(b, y, 0, "ReluForward");
  expect_matches(b, dx, 0, "ReluBackward");
  expect_matches(b, dx_from_y, 0, "ReluBackwardFromOutput");
}

TYPED_TEST(CudaStorageFunctors, SeluForwardAndBackward) {
  using T = TypeParam;
  Backend& b = *this->backend;
  const size_t n = 100003;
  Twin<T> x(b, stored<T>(uniform(n, -8, 4, 3)), "x"), dy(b, stored<T>(uniform(n, -1, 1, 4)), "dy");
  Twin<T> y(b, std::vector<T>(n), "y"), dx(b, std::vector<T>(n), "dx");
  launch_host("selu", x.n(), SeluForward<T>{x.h(), y.h()});
  launch(b.compute_stream(), "selu", x.n(), SeluForward<T>{x.d(), y.d()});
  launch_host("selu_bwd", x.n(), SeluBackward<T>{x.h(), dy.h(), dx.h()});
  launch(b.compute_stream(), "selu_bwd", x.n(), SeluBackward<T>{x.d(), dy.d(), dx.d()});
  Twin<T> dx_from_y(b, std::vector<T>(n), "dx from y");
  launch_host("selu_bwd_from_y", x.n(), SeluBackwardFromOutput<T>{y.h(), dy.h(), dx_from_y.h()});
  launch(b.compute_stream(), "selu_bwd_from_y", x.n(), SeluBackwardFromOutput<T>{y.d(), dy.d(), dx_from_y.d()});
  expect_matches(b, y, ulp_tolerance<T>(), "SeluForward");
  expect_matches(b, dx, ulp_tolerance<T>(), "SeluBackward");
  expect_matches(b, dx_from_y, ulp_tolerance<T>(), "SeluBackwardFromOutput");
}

// launch_elements over a multiple of 8 elements at aligned pointers: a device thread per pack of 8
// (kernels/packs.hpp), against the host's one element per index; an element count that is not a
// multiple of 8 runs one element per thread.
TYPED_TEST(CudaStorageFunctors, ElementPacksMatchTheHost) {
  using T = TypeParam;
  Backend& b = *this->backend;
  for (const size_t n : {size_t{100000}, size_t{100003}}) {
    Twin<T> x(b, stored<T>(uniform(n, -3, 3, 11)), "x"), dy(b, stored<T>(uniform(n, -1, 1, 12)), "dy");
    Twin<T> y(b, std::vector<T>(n), "y"), dx(b, std::vector<T>(n), "dx"), sum(b, std::vector<T>(n), "sum");
    Twin<float> wide(b, uniform(n, -100, 100, 13), "wide");
    Twin<T> narrow(b, std::vector<T>(n), "narrow");
    ASSERT_EQ(x.n() % kChannelPack == 0, n == 100000);
    launch_host("relu", x.n(), ReluForward<T>{x.h(), y.h()});
    launch_elements(b.compute_stream(), "relu", x.n(), ReluForward<T>{x.d(), y.d()});
    launch_host("selu_bwd", x.n(), SeluBackward<T>{x.h(), dy.h(), dx.h()});
    launch_elements(b.compute_stream(), "selu_bwd", x.n(), SeluBackward<T>{x.d(), dy.d(), dx.d()});
    launch_host("add", x.n(), AddTensors<T>{x.h(), dy.h(), sum.h()});
    launch_elements(b.compute_stream(), "add", x.n(), AddTensors<T>{x.d(), dy.d(), sum.d()});
    launch_host("cast", x.n(), Cast<float, T>{wide.h(), narrow.h(), 4.0f});
    launch_elements(b.compute_stream(), "cast", x.n(), Cast<float, T>{wide.d(), narrow.d(), 4.0f});
    const std::string at = " over " + std::to_string(n);
    expect_matches(b, y, 0, "ReluForward" + at);
    expect_matches(b, dx, ulp_tolerance<T>(), "SeluBackward" + at);
    expect_matches(b, sum, 0, "AddTensors" + at);
    expect_matches(b, narrow, 0, "Cast" + at);
  }
}

TYPED_TEST(CudaStorageFunctors, DropoutForwardAndBackward) {
  using T = TypeParam;
  Backend& b = *this->backend;
  const int64_t per = 1000, rows = 64, n = per * rows;
  std::vector<int64_t> idx(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) idx[static_cast<size_t>(r)] = 5000 + 3 * r;
  Twin<int64_t> index(b, idx, "sample index");
  Twin<T> x(b, stored<T>(uniform(static_cast<size_t>(n), -2, 2, 5)), "x"), y(b, std::vector<T>(n), "y");
  Twin<uint8_t> mask(b, std::vector<uint8_t>(static_cast<size_t>(n), 7), "mask");
  Twin<double> step(b, {11.0}, "step");
  launch_host("dropout", n, DropoutForward<T>{x.h(), y.h(), mask.h(), 0.3f, 7, step.h(), index.h(), per});
  launch(b.compute_stream(), "dropout", n,
         DropoutForward<T>{x.d(), y.d(), mask.d(), 0.3f, 7, step.d(), index.d(), per});
  expect_matches(b, mask, 0, "DropoutForward mask");
  expect_matches(b, y, 0, "DropoutForward");
  Twin<T> dy(b, stored<T>(uniform(static_cast<size_t>(n), -1, 1, 6)), "dy"), dx(b, std::vector<T>(n), "dx");
  launch_host("dropout_bwd", n, DropoutBackward<T>{dy.h(), mask.h(), dx.h(), 1.0f / 0.7f});
  launch(b.compute_stream(), "dropout_bwd", n, DropoutBackward<T>{dy.d(), mask.d(), dx.d(), 1.0f / 0.7f});
  expect_matches(b, dx, 0, "DropoutBackward");
}

TYPED_TEST(CudaStorageFunctors, NormalizeFromUint8) {
  using T = TypeParam;
  Backend& b = *this->backend;
  const int64_t pixels = 32 * 28 * 28, c = 3;
  std::vector<uint8_t> raw(static_cast<size_t>(pixels * c));
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>((i * 7919) % 256);
  Twin<uint8_t> x(b, raw, "x");
  Twin<float> mean(b, {120.5f, 110.25f, 100.0f}, "mean"), inv(b, {1 / 60.0f, 1 / 55.0f, 1 / 50.0f}, "inv_std");
  Twin<T> y(b, std::vector<T>(raw.size()), "y");
  launch_host("normalize", pixels, Normalize<uint8_t, T>{x.h(), y.h(), mean.h(), inv.h(), c});
  launch(b.compute_stream(), "normalize", pixels, Normalize<uint8_t, T>{x.d(), y.d(), mean.d(), inv.d(), c});
  expect_matches(b, y, 0, "Normalize from uint8");
}

// Float samples (spectra, fields): f32 stored values with a large offset, to every compute type.
TYPED_TEST(CudaStorageFunctors, NormalizeFromFloat32) {
  using T = TypeParam;
  Backend& b = *this->backend;
  const int64_t rows = 64 * 256, c = 2;
  Twin<float> x(b, uniform(static_cast<size_t>(rows * c), 9990, 10010, 21), "x");
  Twin<float> mean(b, {10000.0f, 10001.0f}, "mean"), inv(b, {0.2f, 0.25f}, "inv_std");
  Twin<T> y(b, std::vector<T>(static_cast<size_t>(rows * c)), "y");
  launch_host("normalize", rows, Normalize<float, T>{x.h(), y.h(), mean.h(), inv.h(), c});
  launch(b.compute_stream(), "normalize", rows, Normalize<float, T>{x.d(), y.d(), mean.d(), inv.d(), c});
  expect_matches(b, y, 0, "Normalize from f32");
}

TEST_F(CudaFunctors, Casts) {
  Backend& b = *backend;
  const size_t n = 70001;
  std::vector<float> v = uniform(n, -70000, 70000, 7);
  v[0] = 65504.0f;
  v[1] = 1.0f + 1.0f / 256;
  v[2] = 1e-6f;  // an f16 subnormal
  v[3] = INFINITY;
  Twin<float> x(b, v, "x"), f(b, std::vector<float>(n), "f");
  Twin<bf16> hb(b, std::vector<bf16>(n), "bf16");
  Twin<f16> hh(b, std::vector<f16>(n), "f16");
  launch_host("cast", x.n(), Cast<float, float>{x.h(), f.h(), 3.0f});
  launch(b.compute_stream(), "cast", x.n(), Cast<float, float>{x.d(), f.d(), 3.0f});
  launch_host("to_bf16", x.n(), Cast<float, bf16>{x.h(), hb.h(), 1.0f});
  launch(b.compute_stream(), "to_bf16", x.n(), Cast<float, bf16>{x.d(), hb.d(), 1.0f});
  launch_host("to_f16", x.n(), Cast<float, f16>{x.h(), hh.h(), 2.0f});
  launch(b.compute_stream(), "to_f16", x.n(), Cast<float, f16>{x.d(), hh.d(), 2.0f});
  expect_matches(b, f, 0, "Cast<float, float>");
  expect_matches(b, hb, 0, "Cast<float, bf16>");
  expect_matches(b, hh, 0, "Cast<float, f16>");
  Twin<float> fb(b, std::vector<float>(n), "from bf16"), fh(b, std::vector<float>(n), "from f16");
  launch_host("from_bf16", x.n(), Cast<bf16, float>{hb.h(), fb.h(), 1.0f});
  launch(b.compute_stream(), "from_bf16", x.n(), Cast<bf16, float>{hb.d(), fb.d(), 1.0f});
  launch_host("from_f16", x.n(), Cast<f16, float>{hh.h(), fh.h(), 4.0f});
  launch(b.compute_stream(), "from_f16", x.n(), Cast<f16, float>{hh.d(), fh.d(), 4.0f});
  expect_matches(b, fb, 0, "Cast<bf16, float>");
  expect_matches(b, fh, 0, "Cast<f16, float>");
}

TEST_F(CudaFunctors, BiasAddAndGrad) {
  Backend& b = *backend;
  const int64_t rows = 257, ch = 96;
  Twin<float> y(b, uniform(static_cast<size_t>(rows * ch), -1, 1, 8), "y"), bias(b, uniform(ch, -1, 1, 9), "bias");
  launch_host("bias", y.n(), BiasAdd{y.h(), bias.h(), ch});
  launch(b.compute_stream(), "bias", y.n(), BiasAdd{y.d(), bias.d(), ch});
  expect_matches(b, y, 0, "BiasAdd");
  Twin<float> db(b, std::vector<float>(ch), "dbias");
  launch_host("bias_grad", ch, BiasGrad{y.h(), db.h(), rows, ch});
  launch(b.compute_stream(), "bias_grad", ch, BiasGrad{y.d(), db.d(), rows, ch});
  expect_matches(b, db, 0, "BiasGrad");
}

TEST_F(CudaFunctors, SoftmaxCrossEntropyAndLossSums) {
  Backend& b = *backend;
  const int64_t rows = 300, k = 10;
  std::vector<float> z = uniform(static_cast<size_t>(rows * k), -20, 20, 10);
  std::vector<int32_t> lab(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) lab[static_cast<size_t>(r)] = static_cast<int32_t>((r * 7) % k);
  Twin<float> logits(b, z, "logits"), probs(b, std::vector<float>(z.size()), "probs");
  Twin<float> loss(b, std::vector<float>(rows), "loss");
  Twin<int32_t> labels(b, lab, "labels"), correct(b, std::vector<int32_t>(rows, -1), "correct");
  const RowsPlan rows_plan = plan_rows(rows, k);
  launch_host("sce", rows, RowsOnHost<SoftmaxCrossEntropyForward>{
                               rows_plan, {logits.h(), labels.h(), probs.h(), loss.h(), correct.h(), k}});
  launch_row_reductions(b.compute_stream(), "sce", rows_plan,
                       SoftmaxCrossEntropyForward{logits.d(), labels.d(), probs.d(), loss.d(), correct.d(), k});
  expect_matches(b, probs, 1e-5, "SoftmaxCrossEntropyForward probabilities");
  expect_matches(b, loss, 1e-5, "SoftmaxCrossEntropyForward loss");
  expect_matches(b, correct, 0, "SoftmaxCrossEntropyForward correct");
  // The backward and the sums from the same (host) inputs on both sides.
  Twin<float> p(b, probs.host, "host probs"), dz(b, std::vector<float>(z.size()), "dlogits");
  launch_host("sce_bwd", rows * k, SoftmaxCrossEntropyBackward{p.h(), labels.h(), dz.h(), k, 1.0f / rows});
  launch(b.compute_stream(), "sce_bwd", rows * k, SoftmaxCrossEntropyBackward{p.d(), labels.d(), dz.d(), k, 1.0f / rows});
  expect_matches(b, dz, 1e-6, "SoftmaxCrossEntropyBackward");
  Twin<float> l(b, loss.host, "host loss");
  Twin<int32_t> c(b, correct.host, "host correct");
  Twin<double> sums(b, {1.5, 2.0, 3.0}, "sums");
  const ColumnSumsPlan plan = plan_column_sums(rows - 5, 1, 3, b.multiprocessor_count());
  ASSERT_EQ(plan.passes(), 1);
  launch_host("loss_sums", plan.row_blocks, ColumnSumsBlock<LossTerms, AddDouble>{plan, {l.h(), c.h()}, nullptr, {sums.h()}});
  launch_column_sums(b.compute_stream(), "loss_sums", plan, LossTerms{l.d(), c.d()}, nullptr, AddDouble{sums.d()});
  // The same lanes and tree; nvcc may contract the shift's subtraction differently.
  expect_matches(b, sums, 1e-6, "loss sums");
}

TEST_F(CudaFunctors, SgdUpdates) {
  Backend& b = *backend;
  const size_t n = 50001;
  for (int variant = 0; variant < 4; ++variant) {
    const bool nesterov = variant & 1, first = variant & 2;
    Twin<float> param(b, uniform(n, -1, 1, 11), "param"), grad(b, uniform(n, -1, 1, 12), "grad");
    Twin<float> buf(b, uniform(n, -1, 1, 13), "momentum");
    const SgdUpdate h{param.h(), grad.h(), buf.h(), 0.1f, 0.9f, 0.1f, 1e-4f, nesterov, first};
    const SgdUpdate d{param.d(), grad.d(), buf.d(), 0.1f, 0.9f, 0.1f, 1e-4f, nesterov, first};
    launch_host("sgd", param.n(), h);
    launch(b.compute_stream(), "sgd", param.n(), d);
    expect_matches(b, param, 1e-6, "SgdUpdate param, variant " + std::to_string(variant));
    expect_matches(b, buf, 1e-6, "SgdUpdate momentum, variant " + std::to_string(variant));
  }
  Twin<float> param(b, uniform(n, -1, 1, 14), "param"), grad(b, uniform(n, -1, 1, 15), "grad");
  launch_host("sgd_plain", param.n(), SgdUpdate{param.h(), grad.h(), nullptr, 0.1f, 0.0f, 0.0f, 0.0f, false, false});
  launch(b.compute_stream(), "sgd_plain", param.n(),
         SgdUpdate{param.d(), grad.d(), nullptr, 0.1f, 0.0f, 0.0f, 0.0f, false, false});
  expect_matches(b, param, 1e-6, "SgdUpdate without momentum");
}

TEST_F(CudaFunctors, AdamWUpdate) {
  Backend& b = *backend;
  const size_t n = 50001;
  Twin<float> param(b, uniform(n, -1, 1, 16), "param"), grad(b, uniform(n, -1, 1, 17), "grad");
  Twin<float> m(b, uniform(n, -0.1f, 0.1f, 18), "exp_avg"), v(b, uniform(n, 1e-4f, 0.01f, 19), "exp_avg_sq");
  const float bc1 = 1 - std::pow(0.9f, 3.0f), bc2 = 1 - std::pow(0.999f, 3.0f);
  launch_host("adamw", param.n(), AdamWUpdate{param.h(), grad.h(), m.h(), v.h(), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, bc1, bc2});
  launch(b.compute_stream(), "adamw", param.n(),
         AdamWUpdate{param.d(), grad.d(), m.d(), v.d(), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, bc1, bc2});
  expect_matches(b, param, 1e-6, "AdamWUpdate param");
  expect_matches(b, m, 1e-6, "AdamWUpdate exp_avg");
  expect_matches(b, v, 1e-6, "AdamWUpdate exp_avg_sq");
}

// More elements than one grid of 65535 blocks of 256 threads covers: the grid-stride loop.
TEST_F(CudaFunctors, ScaleAndDivideOverMoreThanOneGrid) {
  Backend& b = *backend;
  const size_t n = size_t{65535} * 256 * 2 + 7;
  Twin<float> x(b, uniform(n, -5, 5, 20), "x");
  launch_host("scale", x.n(), Scale{x.h(), 0.375f});
  launch(b.compute_stream(), "scale", x.n(), Scale{x.d(), 0.375f});
  launch_host("divide", x.n(), DivideBy{x.h(), 3.0f});
  launch(b.compute_stream(), "divide", x.n(), DivideBy{x.d(), 3.0f});
  expect_matches(b, x, 0, "Scale then DivideBy");
}

TEST_F(CudaFunctors, AugmentCropFlipUint8) {
  Backend& b = *backend;
  const int64_t s = 64, h = 28, w = 28, c = 3, plane = h * w * c;
  std::vector<uint8_t> raw(static_cast<size_t>(s * plane));
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i % 251 + 1);
  std::vector<int64_t> idx(static_cast<size_t>(s));
  for (int64_t i = 0; i < s; ++i) idx[static_cast<size_t>(i)] = 1000 + 13 * i;
  Twin<uint8_t> x(b, raw, "x"), y(b, std::vector<uint8_t>(raw.size()), "y");
  Twin<int64_t> index(b, idx, "sample index");
  Twin<double> step(b, {9.0}, "step");
  launch_host("augment", s, AugmentCropFlip<uint8_t>{x.h(), y.h(), h, w, c, 4, true, 3, step.h(), index.h()});
  launch(b.compute_stream(), "augment", s,
         AugmentCropFlip<uint8_t>{x.d(), y.d(), h, w, c, 4, true, 3, step.d(), index.d()});
  expect_matches(b, y, 0, "AugmentCropFlip<uint8_t>");
}

TEST_F(CudaFunctors, AugmentCropFlipFloat32) {
  Backend& b = *backend;
  const int64_t s = 16, h = 32, w = 32, c = 2, plane = h * w * c;
  std::vector<int64_t> idx(static_cast<size_t>(s));
  for (int64_t i = 0; i < s; ++i) idx[static_cast<size_t>(i)] = 7 + 5 * i;
  Twin<float> x(b, uniform(static_cast<size_t>(s * plane), -3, 3, 22), "x");
  Twin<float> y(b, std::vector<float>(static_cast<size_t>(s * plane)), "y");
  Twin<int64_t> index(b, idx, "sample index");
  Twin<double> step(b, {11.0}, "step");
  launch_host("augment", s, AugmentCropFlip<float>{x.h(), y.h(), h, w, c, 3, true, 5, step.h(), index.h()});
  launch(b.compute_stream(), "augment", s,
         AugmentCropFlip<float>{x.d(), y.d(), h, w, c, 3, true, 5, step.d(), index.d()});
  expect_matches(b, y, 0, "AugmentCropFlip<float>");
}

}  // namespace
