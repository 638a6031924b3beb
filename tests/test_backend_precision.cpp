// The CPU backend's heavy operators in bf16 and f16 storage (oneDNN bf16 kernels, the bf16 matmul
// inner product, and the emulated f32-on-low-precision ops) against its f32 operators on the same
// inputs rounded to that type (the f32 operators are checked against double-precision loops in
// test_backend_{conv,inner_product,pool}.cpp). Outputs are rounded to the storage type, so the
// tolerance is that type's rounding; weight and bias gradients are f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/bf16_gemm_tuning.hpp"
#include "scaletrain/backend/cpu/bf16_gemm_shapes.hpp"
#include "scaletrain/core/half.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using testing::random_vec;
using testing::Vec;

// A vector stored as `t` (f32, bf16 or f16): the bits an op reads and writes.
struct Stored {
  DType t;
  std::vector<uint16_t> half;
  Vec full;
  Stored(DType type, const Vec& v) : t(type) {
    if (t == DType::f32) {
      full = v;
      return;
    }
    half.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      half[i] = t == DType::bf16 ? float_to_bf16(v[i]).bits : float_to_f16(v[i]).bits;
  }
  Stored(DType type, size_t n) : Stored(type, Vec(n, 0.0f)) {}
  void* data() { return t == DType::f32 ? static_cast<void*>(full.data()) : static_cast<void*>(half.data()); }
  Vec values() const {
    if (t == DType::f32) return full;
    Vec v(half.size());
    for (size_t i = 0; i < half.size(); ++i) v[i] = t == DType::bf16 ? bf16_to_float(bf16{half[i]}) : f16_to_float(f16{half[i]});
    return v;
  }
};

// The value each element has once stored as `t`.
Vec rounded(DType t, const Vec& v) { return Stored(t, v).values(); }

// max |got - want| <= rtol * max |want|.
void expect_near_all(const Vec& got, const Vec& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  ASSERT_GT(scale, 0) << what << ": the reference is all zeros";
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), rtol * scale) << what << " at " << i << ": " << got[i] << " vs " << want[i];
}

double tolerance(DType t) { return t == DType::bf16 ? 2e-2 : 2e-3; }

struct WeightedResult {
  Vec y, dx, dw, db;
};

// Runs forward, backward_data and backward_weights of an op made by `make` in dtype t on inputs
// that are already representable in t.
template <class Op, class Make>
WeightedResult run_weighted(DType t, Make make, const Vec& x, const Vec& w, const Vec& b, const Vec& dy,
                            size_t y_size) {
  std::unique_ptr<Op> op = make(t);
  Stored xs(t, x), ws(t, w), dys(t, dy), ys(t, y_size), dxs(t, x.size());
  WeightedResult r;
  r.dw.assign(w.size(), 0.0f);
  r.db.assign(b.size(), 0.0f);
  op->forward(xs.data(), ws.data(), b.data(), ys.data());
  op->backward_data(dys.data(), ws.data(), dxs.data());
  op->backward_weights(xs.data(), dys.data(), r.dw.data(), r.db.data());
  r.y = ys.values();
  r.dx = dxs.values();
  return r;
}

template <class Op, class Make>
void check_weighted(DType t, Make make, size_t nx, size_t nw, size_t nb, size_t ny, const std::string& what) {
  const Vec x = rounded(t, random_vec(nx, 1)), w = rounded(t, random_vec(nw, 2)), dy = rounded(t, random_vec(ny, 3));
  const Vec b = random_vec(nb, 4);
  const WeightedResult low = run_weighted<Op>(t, make, x, w, b, dy, ny);
  const WeightedResult ref = run_weighted<Op>(DType::f32, make, x, w, b, dy, ny);
  const std::string name = what + " in " + std::string(dtype_name(t));
  expect_near_all(low.y, ref.y, tolerance(t), name + " forward");
  expect_near_all(low.dx, ref.dx, tolerance(t), name + " backward_data");
  expect_near_all(low.dw, ref.dw, 1e-3, name + " backward_weights (f32 dw)");
  if (nb > 0) expect_near_all(low.db, ref.db, 1e-3, name + " backward_weights (f32 db)");
}

// A bf16 convolution with the layer's activation as one op (on AVX512-BF16 CPUs the oneDNN primitive,
// the matmul of a pointwise one, applies it as a post-op and leaves pre unwritten) against the f32 op
// on the same inputs: pointwise and 3x3, odd channel counts, batch 1 to 3, each activation; the
// backward with and without dx.
TEST(BackendPrecision, Bf16ConvWithItsActivation) {
  auto be = make_cpu_backend(0, false, Bf16GemmCompute::bf16);
  const bool native = be->precision_support(DType::bf16).native;
  for (Activation act : {Activation::relu, Activation::selu}) {
    for (const ConvShape& shape : {testing::conv_shape(3, 5, 7, 10, 17, 1, 1, 0), testing::conv_shape(1, 4, 4, 33, 8, 1, 1, 0),
                                   testing::conv_shape(2, 6, 7, 3, 17, 3, 1, 1), testing::conv_shape(1, 8, 8, 1, 20, 3, 1, 1)}) {
      SCOPED_TRACE(shape.to_string() + ", activation " + activation_name(act));
      const size_t nx = shape.batch * shape.in_h * shape.in_w * shape.in_c;
      const size_t nw = shape.out_c * shape.in_c * shape.kernel_h * shape.kernel_w;
      const size_t ny = shape.batch * shape.out_h() * shape.out_w() * shape.out_c;
      const Vec x = rounded(DType::bf16, random_vec(nx, 1)), w = rounded(DType::bf16, random_vec(nw, 2));
      const Vec dy = rounded(DType::bf16, random_vec(ny, 3)), b = random_vec(shape.out_c, 4);
      struct Result {
        Vec y, dx, dw, db, dw_without_dx;
        bool pre_written = false;
      };
      auto run = [&](DType t) {
        ConvShape s = shape;
        s.dtype = t;
        auto op = be->make_activated_conv(s, act, nullptr);
        Stored xs(t, x), ws(t, w), dys(t, dy), pre(t, Vec(ny, 1e30f)), ys(t, ny), dpre(t, ny), dxs(t, nx);
        const Vec untouched = pre.values();
        Result r{Vec(), Vec(), Vec(nw), Vec(shape.out_c), Vec(nw)};
        op->forward(xs.data(), ws.data(), b.data(), pre.data(), ys.data());
        r.pre_written = pre.values() != untouched;
        op->backward(xs.data(), pre.data(), ys.data(), dys.data(), ws.data(), dpre.data(), r.dw.data(), r.db.data(),
                     dxs.data());
        Vec db2(shape.out_c);
        op->backward(xs.data(), pre.data(), ys.data(), dys.data(), ws.data(), dpre.data(), r.dw_without_dx.data(),
                     db2.data(), nullptr);
        r.y = ys.values();
        r.dx = dxs.values();
        return r;
      };
      const Result low = run(DType::bf16), ref = run(DType::f32);
      if (native) {
        EXPECT_FALSE(low.pre_written) << "the bf16 op should apply the activation as oneDNN's post-op";
      }
      expect_near_all(low.y, ref.y, tolerance(DType::bf16), "y");
      expect_near_all(low.dx, ref.dx, tolerance(DType::bf16), "dx");
      expect_near_all(low.dw, ref.dw, tolerance(DType::bf16), "dw");
      expect_near_all(low.db, ref.db, tolerance(DType::bf16), "db");
      EXPECT_EQ(low.dw_without_dx, low.dw);
    }
  }
}

// 3 samples of 9x9.
ConvShape conv_shape(int64_t c_in, int64_t c_out, int64_t k, int64_t stride, int64_t pad, int64_t groups, bool bias) {
  return testing::conv_shape(3, 9, 9, c_in, c_out, k, stride, pad, groups, bias);
}

void check_conv(Backend& be, ConvShape s, const std::string& what) {
  const size_t nx = s.batch * s.in_h * s.in_w * s.in_c, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
  const size_t nw = s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w, nb = s.bias ? s.out_c : 0;
  for (DType t : {DType::bf16, DType::f16}) {
    auto make = [&](DType d) {
      ConvShape c = s;
      c.dtype = d;
      return be.make_conv(c);
    };
    check_weighted<ConvOp>(t, make, nx, nw, nb, ny, what);
  }
}

// (onednn_only, how bf16 GEMMs compute): every bf16 path agrees with the f32 reference within bf16's tolerance.
struct CpuPaths {
  bool onednn_only;
  Bf16GemmCompute bf16_gemm;
};

// One pooling op's forward and backward in `d` on x (ny outputs) and dy: (y, dx).
std::pair<Vec, Vec> run_pool(Backend& be, PoolShape s, DType d, const Vec& x, const Vec& dy, size_t ny) {
  s.dtype = d;
  auto op = be.make_pool(s);
  Stored xs(d, x), ys(d, ny), dys(d, dy), dxs(d, x.size());
  op->forward(xs.data(), ys.data(), true);
  op->backward(dys.data(), dxs.data());
  return std::make_pair(ys.values(), dxs.values());
}

class LowPrecisionOps : public ::testing::TestWithParam<CpuPaths> {
 protected:
  std::unique_ptr<Backend> be = make_cpu_backend(1, GetParam().onednn_only, GetParam().bf16_gemm);
};

TEST_P(LowPrecisionOps, Convolution3x3Strided) { check_conv(*be, conv_shape(5, 8, 3, 2, 1, 1, true), "conv 3x3/2"); }
TEST_P(LowPrecisionOps, ConvolutionDepthwise) { check_conv(*be, conv_shape(16, 16, 3, 1, 1, 16, false), "depthwise"); }
// First layers: one channel into few outputs (the narrow-rows op, in f32 on bf16 storage) and into
// many (the few-taps op in f32; oneDNN's in bf16).
TEST_P(LowPrecisionOps, ConvolutionFirstLayerNarrow) { check_conv(*be, conv_shape(1, 6, 5, 1, 2, 1, true), "1 -> 6"); }
TEST_P(LowPrecisionOps, ConvolutionFirstLayerWide) { check_conv(*be, conv_shape(1, 128, 3, 1, 1, 1, true), "1 -> 128"); }
TEST_P(LowPrecisionOps, ConvolutionPointwise) { check_conv(*be, conv_shape(24, 40, 1, 1, 0, 1, true), "pointwise"); }

// PyTorch's explicit padding on even sizes, where the last row and column of padding (or, for 1x1/2,
// of the input) fall in no window: 3x3/2 padding 1, ResNet's 7x7/2 stem with padding 3, 1x1/2.
TEST_P(LowPrecisionOps, ConvolutionExplicitPaddingStrideTwo) {
  check_conv(*be, testing::conv_shape(2, 8, 8, 5, 8, 3, 2, 1), "conv 3x3/2 padding 1 on 8x8");
  check_conv(*be, testing::conv_shape(2, 16, 16, 3, 16, 7, 2, 3), "conv 7x7/2 padding 3 on 16x16");
  check_conv(*be, testing::conv_shape(2, 8, 8, 16, 24, 1, 2, 0), "conv 1x1/2 on 8x8");
  check_conv(*be, testing::conv_shape(2, 8, 8, 16, 16, 3, 2, 1, 16, false), "depthwise 3x3/2 padding 1 on 8x8");
}

TEST_P(LowPrecisionOps, InnerProduct) {
  for (bool bias : {true, false}) {
    InnerProductShape s;
    s.batch = 7;
    s.in_features = 50;
    s.out_features = 19;
    s.bias = bias;
    for (DType t : {DType::bf16, DType::f16}) {
      auto make = [&](DType d) {
        InnerProductShape c = s;
        c.dtype = d;
        return be->make_inner_product(c);
      };
      check_weighted<InnerProductOp>(t, make, 7 * 50, 19 * 50, bias ? 19 : 0, 7 * 19,
                                     bias ? "inner product" : "inner product without bias");
    }
  }
}

TEST_P(LowPrecisionOps, Pooling) {
  // Max pooling: the direct op at any channel count (unless oneDNN only); average pooling: oneDNN.
  for (PoolKind kind : {PoolKind::max, PoolKind::average})
    for (int64_t channels : {6, 16})
      for (DType t : {DType::bf16, DType::f16}) {
        PoolShape s;
        s.kind = kind;
        s.batch = 2;
        s.in_h = s.in_w = 8;
        s.channels = channels;
        const size_t nx = 2 * 8 * 8 * channels, ny = 2 * 4 * 4 * channels;
        const Vec x = rounded(t, random_vec(nx, 5)), dy = rounded(t, random_vec(ny, 6));
        const auto low = run_pool(*be, s, t, x, dy, ny), ref = run_pool(*be, s, DType::f32, x, dy, ny);
        const std::string what = std::string(kind == PoolKind::max ? "max" : "average") + " pooling of " +
                                 std::to_string(channels) + " channels in " + std::string(dtype_name(t));
        expect_near_all(low.first, ref.first, tolerance(t), what + " forward");
        expect_near_all(low.second, ref.second, tolerance(t), what + " backward");
      }
}

// 3x3/2 windows with padding 1 on every side (ResNet's stem pooling), on an even size (the last row
// and column of padding in no window) and an odd one.
TEST_P(LowPrecisionOps, PoolingExplicitPadding) {
  for (PoolKind kind : {PoolKind::max, PoolKind::average})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{8, 8}, {9, 7}})
      for (DType t : {DType::bf16, DType::f16}) {
        const PoolShape s = testing::pool_shape(kind, 2, h, w, 6, 3, 2, 1);
        const size_t nx = 2 * h * w * 6, ny = 2 * s.out_h() * s.out_w() * 6;
        const Vec x = rounded(t, random_vec(nx, 7)), dy = rounded(t, random_vec(ny, 8));
        const auto low = run_pool(*be, s, t, x, dy, ny), ref = run_pool(*be, s, DType::f32, x, dy, ny);
        const std::string what = s.to_string() + " in " + std::string(dtype_name(t));
        expect_near_all(low.first, ref.first, tolerance(t), what + " forward");
        expect_near_all(low.second, ref.second, tolerance(t), what + " backward");
      }
}

TEST_P(LowPrecisionOps, ReportsHowEachTypeRuns) {
  EXPECT_TRUE(be->precision_support(DType::f32).native);
  const PrecisionSupport f16 = be->precision_support(DType::f16);
  EXPECT_FALSE(f16.native);
  EXPECT_NE(f16.note.find("emulated"), std::string::npos) << f16.note;
  const PrecisionSupport bf = be->precision_support(DType::bf16);
  EXPECT_EQ(bf.native, bf.note.find("emulated") == std::string::npos) << bf.note;
  EXPECT_NE(testing::error_of([&] { (void)be->precision_support(DType::u8); }).find("f32, bf16 or f16"),
            std::string::npos);
}

// The bf16 inner product's bias gradient sums dy's rows in runs per thread: many rows, a column
// count that is no multiple of 16, on three threads (more than this machine's cores), against the
// f32 op on the same inputs.
TEST(CpuBf16Gemm, BiasGradientOfManyRowsOnThreeThreads) {
  auto be = make_cpu_backend(3, false, Bf16GemmCompute::bf16);
  InnerProductShape s;
  s.batch = 1001;
  s.in_features = 9;
  s.out_features = 37;
  auto make = [&](DType d) {
    InnerProductShape c = s;
    c.dtype = d;
    return be->make_inner_product(c);
  };
  check_weighted<InnerProductOp>(DType::bf16, make, 1001 * 9, 37 * 9, 37, 1001 * 37, "inner product of 1001 rows");
}

// A bf16 GEMM on f32 FMAs says so in the bf16 note (run.json's "compute" and the start-up line); auto
// starts on oneDNN's bf16 kernels until the trainer's timing sets a way.
TEST(CpuBf16Gemm, NoteNamesTheChoice) {
  const PrecisionSupport on_f32 = make_cpu_backend(1, false, Bf16GemmCompute::f32)->precision_support(DType::bf16);
  const PrecisionSupport on_bf16 = make_cpu_backend(1, false, Bf16GemmCompute::bf16)->precision_support(DType::bf16);
  const PrecisionSupport on_auto =
      make_cpu_backend(1, false, Bf16GemmCompute::automatic)->precision_support(DType::bf16);
  if (!on_bf16.native) GTEST_SKIP() << "bf16 is emulated on this CPU: " << on_bf16.note;
  EXPECT_NE(on_f32.note.find("as f32 GEMMs"), std::string::npos) << on_f32.note;
  EXPECT_EQ(on_bf16.note.find("as f32 GEMMs"), std::string::npos) << on_bf16.note;
  EXPECT_EQ(on_auto.note, on_bf16.note);
  EXPECT_EQ(parse_bf16_gemm_compute("auto"), Bf16GemmCompute::automatic);
  EXPECT_NE(testing::error_of([] { (void)parse_bf16_gemm_compute("fast"); }).find("run.cpu_bf16_gemm = 'fast'"),
            std::string::npos);
}

// The timings name the expected shapes with their counts, in order, each way with a positive time.
void expect_timed(const std::vector<Bf16GemmShapeTiming>& t, const std::vector<std::pair<std::string, int>>& shapes) {
  ASSERT_EQ(t.size(), shapes.size());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].shape, shapes[i].first);
    EXPECT_EQ(t[i].count, shapes[i].second) << t[i].shape;
    EXPECT_TRUE(std::isfinite(t[i].bf16_s) && t[i].bf16_s > 0) << t[i].shape << ": " << t[i].bf16_s;
    EXPECT_TRUE(std::isfinite(t[i].f32_s) && t[i].f32_s > 0) << t[i].shape << ": " << t[i].f32_s;
  }
}

// Where bf16 is native, the backend records every bf16 GEMM-shaped op it makes (inner products and
// 1x1 convolutions, with or without their activation; not other convolutions), counts repeated
// shapes, and times both ways at each; set_bf16_gemm changes how later ops compute, and the note.
// Without native bf16 (or with oneDNN's primitives only) there is no choice: no tuning at all.
TEST(CpuBf16Gemm, RecordsTheGemmShapesItMakesAndTimesBothWays) {
  auto be = make_cpu_backend(1, false, Bf16GemmCompute::automatic);
  Bf16GemmTuning* tuning = be->bf16_gemm_tuning();
  EXPECT_EQ(make_cpu_backend(1, true, Bf16GemmCompute::automatic)->bf16_gemm_tuning(), nullptr);
  if (!be->precision_support(DType::bf16).native) {
    EXPECT_EQ(tuning, nullptr);
    GTEST_SKIP() << "bf16 is emulated on this CPU: no choice to time";
  }
  ASSERT_NE(tuning, nullptr);
  EXPECT_EQ(tuning->bf16_gemm(), Bf16GemmCompute::bf16);
  const InnerProductShape ip{16, 100, 30, true, DType::bf16};
  ConvShape pointwise = testing::conv_shape(2, 6, 5, 12, 20, 1, 1, 0), three = testing::conv_shape(2, 6, 5, 12, 20, 3, 1, 1);
  pointwise.dtype = three.dtype = DType::bf16;
  InnerProductShape f32_ip = ip;
  f32_ip.dtype = DType::f32;
  for (int i = 0; i < 2; ++i) (void)be->make_inner_product(ip);
  (void)be->make_inner_product(f32_ip);
  (void)be->make_activated_conv(pointwise, Activation::relu, nullptr);
  (void)be->make_conv(three);
  expect_timed(tuning->time_bf16_gemm_shapes(3, 10.0), {{ip.to_string(), 2}, {pointwise.to_string(), 1}});
  tuning->set_bf16_gemm(Bf16GemmCompute::f32);
  EXPECT_EQ(tuning->bf16_gemm(), Bf16GemmCompute::f32);
  EXPECT_NE(be->precision_support(DType::bf16).note.find("as f32 GEMMs"), std::string::npos);
  // Made the f32 way from now on: with its activation, a pointwise op is the composed one, and it is
  // recorded once, not once per layer of the composition.
  (void)be->make_activated_conv(pointwise, Activation::relu, nullptr);
  EXPECT_EQ(tuning->time_bf16_gemm_shapes(1, 0.0).at(1).count, 2);
  EXPECT_NE(testing::error_of([&] { tuning->set_bf16_gemm(Bf16GemmCompute::automatic); }).find("bf16 or f32"),
            std::string::npos);
  // The simulated device runs the host's operators: the host's tuning.
  BackendOptions so;
  so.kind = DeviceKind::sim;
  so.threads = 1;
  EXPECT_NE(make_backend(so)->bf16_gemm_tuning(), nullptr);
}

// A dense layer asks for its three products as matmuls (nn/linear_products.hpp); they share one
// inner-product op, so its shape counts once per layer: two layers of one shape, twice.
TEST(CpuBf16Gemm, DenseLayersRecordTheirShapeOncePerLayer) {
  auto be = make_cpu_backend(1, false, Bf16GemmCompute::automatic);
  Bf16GemmTuning* tuning = be->bf16_gemm_tuning();
  if (!tuning) GTEST_SKIP() << "bf16 is emulated on this CPU: no choice to time";
  MatmulShape fwd, weights, data;
  fwd.m = weights.k = data.m = 16;   // rows
  fwd.k = weights.n = data.n = 100;  // in
  fwd.n = weights.m = data.k = 30;   // out
  fwd.trans_b = weights.trans_a = true;
  fwd.bias = true;
  weights.epilogue = MatmulEpilogue::bias_gradient;
  fwd.dtype = fwd.out_dtype = weights.dtype = data.dtype = data.out_dtype = DType::bf16;
  weights.out_dtype = DType::f32;
  std::vector<std::unique_ptr<MatmulOp>> layers;
  for (int layer = 0; layer < 2; ++layer)
    for (const MatmulShape* s : {&fwd, &weights, &data}) layers.push_back(be->make_matmul(*s));
  expect_timed(tuning->time_bf16_gemm_shapes(1, 10.0),
               {{InnerProductShape{16, 100, 30, true, DType::bf16}.to_string(), 2}});
}

// The timing itself, on any CPU (both ways here are the backend's own bf16 ops, native or emulated): each
// recorded shape once, with its count, each way's forward and backward passes run on operands of the
// shape's sizes (a wrong size would read or write out of bounds), one warm-up call, then the rounds
// until the budget is spent: always one, at most `rounds`.
TEST(CpuBf16Gemm, ShapesTimeBothWaysOfEachRecordedShape) {
  auto be = make_cpu_backend(1);
  const InnerProductShape ip{7, 33, 17, true, DType::bf16};
  ConvShape pointwise = testing::conv_shape(2, 5, 3, 9, 11, 1, 1, 0);
  pointwise.dtype = DType::bf16;
  cpu::Bf16GemmShapes shapes;
  shapes.record(ip);
  shapes.record(pointwise);
  shapes.record(ip);
  int made_f32 = 0, made_bf16 = 0;
  const auto count = [&](bool on_f32) { ++(on_f32 ? made_f32 : made_bf16); };
  const cpu::Bf16GemmFactories make{[&](const ConvShape& s, bool on_f32) {
                                      count(on_f32);
                                      return be->make_conv(s);
                                    },
                                    [&](const InnerProductShape& s, bool on_f32) {
                                      count(on_f32);
                                      return be->make_inner_product(s);
                                    }};
  for (const auto& [rounds, budget] : {std::pair{3, 10.0}, std::pair{3, 0.0}}) {
    expect_timed(shapes.time(make, rounds, budget), {{ip.to_string(), 2}, {pointwise.to_string(), 1}});
  }
  EXPECT_EQ(made_f32, 4);  // one op per shape and way, per timing
  EXPECT_EQ(made_bf16, 4);
}

INSTANTIATE_TEST_SUITE_P(Cpu, LowPrecisionOps,
                         ::testing::Values(CpuPaths{false, Bf16GemmCompute::automatic},
                                           CpuPaths{false, Bf16GemmCompute::bf16}, CpuPaths{false, Bf16GemmCompute::f32},
                                           CpuPaths{true, Bf16GemmCompute::automatic}),
                         [](const auto& info) {
                           return std::string(info.param.onednn_only ? "onednn_only" : "fast_paths") + "_bf16_gemm_" +
                                  bf16_gemm_compute_name(info.param.bf16_gemm);
                         });

}  // namespace
}  // namespace scaletrain
