// The CUDA backend's cuDNN convolution against the CPU backend (oneDNN) on the same inputs: forward,
// backward-data, backward-weights and the bias gradient, in f32, bf16 and f16, for plain, grouped,
// depthwise, pointwise and stride-2 'same' (asymmetric padding) shapes, with tolerances by dtype;
// in deterministic mode two backward passes are bitwise equal; the chosen algorithms are reported
// per shape. Skipped without a CUDA device (tests/cuda.cmake).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "support/stored_values.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using testing::conv_shape;
using testing::CudaTest;
using testing::exact;
using testing::expect_close;
using testing::random_vec;
using testing::storage_rtol;
using testing::stored;
using testing::to_device;
using testing::to_host;
using testing::Vec;
using testing::widened;

std::vector<ConvShape> conv_shapes() {
  std::vector<ConvShape> v;
  v.push_back(conv_shape(2, 8, 8, 16, 32, 3, 1, 1));  // regular, tensor-core friendly channels
  v.push_back(conv_shape(1, 9, 7, 3, 10, 3, 1, 1));   // batch 1, odd sizes and channels
  ConvShape same2 = conv_shape(3, 8, 8, 6, 10, 3, 2, 0);
  same2.pad_bottom = same2.pad_right = 1;  // TensorFlow 'same', stride 2: asymmetric
  v.push_back(same2);
  ConvShape same5 = conv_shape(2, 10, 12, 8, 16, 5, 2, 1);
  same5.pad_bottom = 2;  // 5x5 'same' stride 2 on 10x12: (1, 2) rows, (1, 2) columns
  same5.pad_right = 2;
  v.push_back(same5);
  v.push_back(conv_shape(2, 8, 8, 32, 64, 3, 1, 1, 2));   // grouped
  v.push_back(conv_shape(2, 7, 7, 6, 9, 3, 1, 1, 3));     // grouped, odd channels per group
  v.push_back(conv_shape(3, 9, 9, 32, 32, 3, 1, 1, 32));  // depthwise
  ConvShape dw2 = conv_shape(2, 8, 10, 24, 24, 3, 2, 0, 24, false);
  dw2.pad_bottom = dw2.pad_right = 1;  // depthwise, stride 2 'same'
  v.push_back(dw2);
  v.push_back(conv_shape(2, 7, 7, 32, 48, 1, 1, 0, 1, false));  // pointwise
  ConvShape top = conv_shape(2, 9, 10, 4, 8, 3, 1, 0);
  top.pad_top = 2;  // more padding at the top than at the bottom
  v.push_back(top);
  // PyTorch's explicit padding on even sizes: the last row and column of padding (of the input, for
  // 1x1/2) in no window.
  v.push_back(conv_shape(2, 16, 16, 3, 16, 7, 2, 3));           // ResNet's stem, 7x7/2 padding 3
  v.push_back(conv_shape(2, 8, 8, 16, 32, 3, 2, 1));            // 3x3/2 padding 1
  v.push_back(conv_shape(2, 8, 8, 16, 32, 1, 2, 0, 1, false));  // 1x1/2 shortcut
  return v;
}

struct ConvRun {
  std::vector<float> y, dx, dw, db;  // widened to float
};

// Forward, backward-data and backward-weights of `op` on device copies of the inputs, outputs
// pre-filled with garbage (every pass must overwrite).
template <class T>
ConvRun run_device(Backend& b, ConvOp& op, const ConvShape& s, const std::vector<T>& x, const std::vector<T>& w,
                   const Vec& bias, const std::vector<T>& dy) {
  const Tensor x_in = to_device(b, x, "x"), w_in = to_device(b, w, "w"), b_in = to_device(b, bias, "b");
  const Tensor dy_in = to_device(b, dy, "dy");
  const T garbage = from_float<T>(12345.0f);
  Tensor y = to_device(b, std::vector<T>(dy.size(), garbage), "y");
  Tensor dx = to_device(b, std::vector<T>(x.size(), garbage), "dx");
  Tensor dw = to_device(b, Vec(w.size(), 1e30f), "dw");
  Tensor db = to_device(b, Vec(bias.size(), 1e30f), "db");
  op.forward(x_in.device_raw(), w_in.device_raw(), s.bias ? b_in.device_data<float>() : nullptr, y.device_raw());
  op.backward_data(dy_in.device_raw(), w_in.device_raw(), dx.device_raw());
  op.backward_weights(x_in.device_raw(), dy_in.device_raw(), dw.device_data<float>(),
                      s.bias ? db.device_data<float>() : nullptr);
  return {widened(to_host<T>(b, y)), widened(to_host<T>(b, dx)), to_host<float>(b, dw), to_host<float>(b, db)};
}

// A convolution's inputs for `s`: x, w and dy in its storage type, and an f32 bias, from fixed seeds.
template <class T>
struct ConvInputs {
  size_t nx, ny, nw;
  std::vector<T> x, w, dy;
  Vec bias;
  explicit ConvInputs(const ConvShape& s)
      : nx(s.batch * s.in_h * s.in_w * s.in_c),
        ny(s.batch * s.out_h() * s.out_w() * s.out_c),
        nw(s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w),
        x(stored<T>(random_vec(nx, 1))),
        w(stored<T>(random_vec(nw, 2))),
        dy(stored<T>(random_vec(ny, 4))),
        bias(random_vec(s.out_c, 3)) {}
};

template <class T>
void check_against_cpu(Backend& gpu, ConvShape s, double rtol) {
  s.dtype = dtype_of<T>::value;
  SCOPED_TRACE(s.to_string());
  const ConvInputs<T> in(s);
  const size_t nx = in.nx, ny = in.ny, nw = in.nw;
  const std::vector<T>& x = in.x;
  const std::vector<T>& w = in.w;
  const std::vector<T>& dy = in.dy;
  const Vec& bias = in.bias;

  auto cpu = make_cpu_backend();
  auto ref_op = cpu->make_conv(s);
  std::vector<T> y_ref(ny), dx_ref(nx);
  Vec dw_ref(nw), db_ref(s.out_c);
  ref_op->forward(x.data(), w.data(), s.bias ? bias.data() : nullptr, y_ref.data());
  ref_op->backward_data(dy.data(), w.data(), dx_ref.data());
  ref_op->backward_weights(x.data(), dy.data(), dw_ref.data(), s.bias ? db_ref.data() : nullptr);

  auto op = gpu.make_conv(s);
  // Twice: the op must pick up the inputs of every call (weights change every step).
  for (int round = 0; round < 2; ++round) {
    const ConvRun got = run_device(gpu, *op, s, x, w, bias, dy);
    expect_close(got.y, exact(y_ref), "forward", rtol);
    expect_close(got.dx, exact(dx_ref), "backward_data", rtol);
    expect_close(got.dw, exact(dw_ref), "backward_weights dw", rtol);
    if (s.bias) expect_close(got.db, exact(db_ref), "backward_weights db", rtol);
  }
}

class CudaConv : public CudaTest {};

TEST_F(CudaConv, F32MatchesTheCpuBackend) {
  for (const ConvShape& s : conv_shapes()) check_against_cpu<float>(*backend, s, storage_rtol<float>());
}

TEST_F(CudaConv, Bf16MatchesTheCpuBackend) {
  for (const ConvShape& s : conv_shapes()) check_against_cpu<bf16>(*backend, s, storage_rtol<bf16>());
}

TEST_F(CudaConv, F16MatchesTheCpuBackend) {
  for (const ConvShape& s : conv_shapes()) check_against_cpu<f16>(*backend, s, storage_rtol<f16>());
}

// An op that takes its filters in its own layout (OHWI, written once per update by nn::Model) gives
// the results of the op handed PyTorch's OIHW filters bit for bit: the same algorithms on the same
// filter bytes, only the per-call reorder gone.
template <class T>
void check_ohwi_filters(Backend& gpu, ConvShape s) {
  s.dtype = dtype_of<T>::value;
  SCOPED_TRACE(s.to_string());
  const int64_t in = s.in_c / s.groups, kh = s.kernel_h, kw = s.kernel_w;
  const ConvInputs<T> inputs(s);
  const std::vector<T>& x = inputs.x;
  const std::vector<T>& w = inputs.w;
  const std::vector<T>& dy = inputs.dy;
  std::vector<T> ohwi(inputs.nw);
  for (int64_t o = 0; o < s.out_c; ++o)
    for (int64_t c = 0; c < in; ++c)
      for (int64_t h = 0; h < kh; ++h)
        for (int64_t q = 0; q < kw; ++q)
          ohwi[static_cast<size_t>(((o * kh + h) * kw + q) * in + c)] =
              w[static_cast<size_t>(((o * in + c) * kh + h) * kw + q)];
  auto oihw_op = gpu.make_conv(s);
  auto ohwi_op = gpu.make_conv(s);
  ASSERT_EQ(ohwi_op->filter_layout(), FilterLayout::ohwi);
  ohwi_op->take_filters_in(FilterLayout::ohwi);
  const ConvRun a = run_device(gpu, *oihw_op, s, x, w, inputs.bias, dy);
  const ConvRun b = run_device(gpu, *ohwi_op, s, x, ohwi, inputs.bias, dy);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.dx, b.dx);
  EXPECT_EQ(a.dw, b.dw);
  EXPECT_EQ(a.db, b.db);
}

TEST_F(CudaConv, OhwiFiltersGiveTheOihwResultsBitwise) {
  for (const ConvShape& s : conv_shapes()) {
    check_ohwi_filters<float>(*backend, s);
    check_ohwi_filters<bf16>(*backend, s);
  }
}

// A convolution with a bias and a ReLU after it (cuDNN's fused forward where cuDNN runs the shape)
// against the CPU backend's activated convolution: y, dx, dw and db. In f32 only: in bf16 the fused
// forward adds a bf16 bias, which moves pre-activations near 0 across it, and the ReLU's gradient
// there with them.
template <class T>
void check_activated_against_cpu(Backend& gpu, ConvShape s, double rtol) {
  s.dtype = dtype_of<T>::value;
  s.bias = true;
  SCOPED_TRACE(s.to_string());
  const ConvInputs<T> in(s);
  auto cpu = make_cpu_backend();
  auto ref = cpu->make_activated_conv(s, Activation::relu);
  std::vector<T> pre(in.ny), y_ref(in.ny), dpre(in.ny), dx_ref(in.nx);
  Vec dw_ref(in.nw), db_ref(s.out_c);
  ref->forward(in.x.data(), in.w.data(), in.bias.data(), pre.data(), y_ref.data());
  ref->backward(in.x.data(), pre.data(), y_ref.data(), in.dy.data(), in.w.data(), dpre.data(), dw_ref.data(),
                db_ref.data(), dx_ref.data());
  auto op = gpu.make_activated_conv(s, Activation::relu);
  const Tensor x_in = to_device(gpu, in.x, "x"), w_in = to_device(gpu, in.w, "w");
  const Tensor b_in = to_device(gpu, in.bias, "b"), dy_in = to_device(gpu, in.dy, "dy");
  Tensor pre_d = to_device(gpu, std::vector<T>(in.ny), "pre"), y = to_device(gpu, std::vector<T>(in.ny), "y");
  Tensor dpre_d = to_device(gpu, std::vector<T>(in.ny), "dpre"), dx = to_device(gpu, std::vector<T>(in.nx), "dx");
  Tensor dw = to_device(gpu, Vec(in.nw, 1e30f), "dw"), db = to_device(gpu, Vec(s.out_c, 1e30f), "db");
  op->forward(x_in.device_raw(), w_in.device_raw(), b_in.device_data<float>(), pre_d.device_raw(), y.device_raw());
  op->backward(x_in.device_raw(), pre_d.device_raw(), y.device_raw(), dy_in.device_raw(), w_in.device_raw(),
               dpre_d.device_raw(), dw.device_data<float>(), db.device_data<float>(), dx.device_raw());
  expect_close(widened(to_host<T>(gpu, y)), exact(y_ref), "forward", rtol);
  expect_close(widened(to_host<T>(gpu, dx)), exact(dx_ref), "backward dx", rtol);
  expect_close(to_host<float>(gpu, dw), exact(dw_ref), "backward dw", rtol);
  expect_close(to_host<float>(gpu, db), exact(db_ref), "backward db", rtol);
}

TEST_F(CudaConv, BiasAndReluInTheForwardMatchTheCpuBackend) {
  for (const ConvShape& s : conv_shapes()) check_activated_against_cpu<float>(*backend, s, storage_rtol<float>());
}

// TF32 tensor cores and nondeterministic algorithms allowed: still the CPU's result, to TF32's
// precision (10 fraction bits).
TEST_F(CudaConv, Tf32AndNondeterministicAlgorithmsStayClose) {
  BackendOptions o;
  o.kind = DeviceKind::cuda;
  o.deterministic = false;
  o.allow_tf32 = true;
  auto fast = make_backend(o);
  for (const ConvShape& s : conv_shapes()) check_against_cpu<float>(*fast, s, 1e-2);
}

// Deterministic mode (the default): backward twice on the same inputs gives the same bits.
TEST_F(CudaConv, DeterministicBackwardIsBitwiseRepeatable) {
  for (const ConvShape& base : conv_shapes()) {
    for (DType t : {DType::f32, DType::bf16}) {
      ConvShape s = base;
      s.dtype = t;
      SCOPED_TRACE(s.to_string());
      auto op = backend->make_conv(s);
      const size_t nx = s.batch * s.in_h * s.in_w * s.in_c, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
      const size_t nw = s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w;
      const size_t es = dtype_size(t);
      auto bytes = [&](size_t n, unsigned seed) {
        const Vec v = random_vec(n, seed);
        std::vector<uint8_t> out(n * es);
        if (t == DType::f32)
          std::memcpy(out.data(), v.data(), out.size());
        else {
          const std::vector<bf16> h = stored<bf16>(v);
          std::memcpy(out.data(), h.data(), out.size());
        }
        return out;
      };
      const Tensor x = to_device(*backend, bytes(nx, 1), "x"), w = to_device(*backend, bytes(nw, 2), "w");
      const Tensor dy = to_device(*backend, bytes(ny, 3), "dy");
      Tensor dx = backend->empty({static_cast<int64_t>(nx * es)}, DType::u8, "dx");
      Tensor dw = backend->empty({static_cast<int64_t>(nw)}, DType::f32, "dw");
      Tensor db = backend->empty({s.out_c}, DType::f32, "db");
      std::vector<std::vector<uint8_t>> dxs;
      std::vector<std::vector<float>> dws, dbs;
      for (int round = 0; round < 2; ++round) {
        op->backward_data(dy.device_raw(), w.device_raw(), dx.device_raw());
        op->backward_weights(x.device_raw(), dy.device_raw(), dw.device_data<float>(),
                             s.bias ? db.device_data<float>() : nullptr);
        dxs.push_back(testing::to_host<uint8_t>(*backend, dx));
        dws.push_back(testing::to_host<float>(*backend, dw));
        if (s.bias) dbs.push_back(testing::to_host<float>(*backend, db));
      }
      EXPECT_TRUE(dxs[0] == dxs[1]) << "dx differs between two runs";
      EXPECT_EQ(std::memcmp(dws[0].data(), dws[1].data(), nw * sizeof(float)), 0) << "dw differs between two runs";
      if (s.bias) {
        EXPECT_EQ(std::memcmp(dbs[0].data(), dbs[1].data(), s.out_c * sizeof(float)), 0);
      }
    }
  }
}

// Every direction's choice is reported once per shape, with its algorithm, time and workspace; an
// identical layer reuses the choice without a second line.
TEST_F(CudaConv, OperatorChoicesNameTheShapes) {
  ConvShape s = conv_shape(4, 16, 16, 32, 32, 3, 2, 0);
  s.pad_bottom = s.pad_right = 1;
  auto a = backend->make_conv(s);
  auto b = backend->make_conv(s);
  const std::vector<std::string> lines = backend->operator_choices();
  for (const char* dir : {"fwd", "bwd data", "bwd filter"}) {
    const std::string prefix = "conv " + std::string(dir) + " " + s.to_string() + ": algo ";
    int found = 0;
    for (const std::string& l : lines) found += l.rfind(prefix, 0) == 0;
    EXPECT_EQ(found, 1) << prefix;
  }
  for (const std::string& l : lines) {
    // Timed (run.deterministic = false) or the heuristic's rank (the default, deterministic).
    EXPECT_TRUE(l.find(" ms, ") != std::string::npos || l.find(", untimed, ") != std::string::npos) << l;
    EXPECT_NE(l.find(" MiB workspace, deterministic"), std::string::npos) << l;
  }
}

TEST_F(CudaConv, ImpossibleShapesAndMissingBuffersThrow) {
  const ConvShape bad = conv_shape(1, 8, 8, 6, 8, 3, 1, 1, 4);
  try {
    backend->make_conv(bad);
    FAIL() << "make_conv accepted " << bad.to_string();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad.to_string()), std::string::npos) << e.what();
  }
  const ConvShape s = conv_shape(1, 4, 4, 2, 2, 3, 1, 1);
  auto op = backend->make_conv(s);
  const Tensor x = to_device(*backend, Vec(32, 0.5f), "x"), dy = to_device(*backend, Vec(32, 0.5f), "dy");
  Tensor dw = backend->empty({36}, DType::f32, "dw");
  EXPECT_THROW(op->backward_weights(x.device_raw(), dy.device_raw(), dw.device_data<float>(), nullptr), Error);
}

}  // namespace
}  // namespace scaletrain
