// The CUDA backend's pooling (cuDNN for symmetric padding, the direct functors for asymmetric
// padding) against the CPU backend (oneDNN) on the same inputs, max and average, forward
// (inference and training) and backward, in f32, bf16 and f16; max-pooling inputs have no ties, so
// both sides pick the same maximum. Backward is bitwise repeatable in deterministic mode, the
// choices are reported per shape. Skipped without a CUDA device (tests/cuda.cmake).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "support/stored_values.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using testing::CudaTest;
using testing::distinct_values;
using testing::exact;
using testing::expect_close;
using testing::pool_shape;
using testing::random_vec;
using testing::storage_rtol;
using testing::stored;
using testing::to_device;
using testing::to_host;
using testing::widened;

std::vector<PoolShape> pool_shapes() {
  std::vector<PoolShape> v;
  for (PoolKind kind : {PoolKind::max, PoolKind::average}) {
    v.push_back(pool_shape(kind, 2, 8, 8, 16, 2, 2, 0));  // 2x2 stride 2
    v.push_back(pool_shape(kind, 2, 7, 7, 10, 3, 2, 1));  // 3x3 stride 2, padded, overlapping
    v.push_back(pool_shape(kind, 1, 9, 7, 3, 2, 2, 0));   // batch 1, odd sizes, floor at the end
    v.push_back(pool_shape(kind, 2, 5, 6, 17, 3, 1, 1));  // stride 1
    v.push_back(pool_shape(kind, 2, 8, 8, 10, 3, 2, 1));  // ResNet's 3x3/2 padding 1, even: last padding unused
    PoolShape same = pool_shape(kind, 2, 7, 7, 6, 2, 2, 0);
    same.pad_bottom = same.pad_right = 1;  // TensorFlow 'same' on an odd input: direct kernels
    v.push_back(same);
    PoolShape same3 = pool_shape(kind, 2, 8, 9, 5, 3, 2, 0);
    same3.pad_bottom = 1;
    same3.pad_left = same3.pad_right = 1;
    v.push_back(same3);
  }
  return v;
}

template <class T>
void check_against_cpu(Backend& gpu, PoolShape s) {
  s.dtype = dtype_of<T>::value;
  SCOPED_TRACE(s.to_string());
  const size_t nx = s.batch * s.in_h * s.in_w * s.channels, ny = s.batch * s.out_h() * s.out_w() * s.channels;
  const std::vector<T> x = stored<T>(distinct_values(nx, 1)), dy = stored<T>(random_vec(ny, 2));
  auto cpu = make_cpu_backend();
  auto ref_op = cpu->make_pool(s);
  std::vector<T> y_ref(ny), dx_ref(nx);
  ref_op->forward(x.data(), y_ref.data(), true);
  ref_op->backward(dy.data(), dx_ref.data());

  auto op = gpu.make_pool(s);
  const T garbage = from_float<T>(12345.0f);
  const Tensor dx_in = to_device(gpu, x, "x"), dy_in = to_device(gpu, dy, "dy");
  Tensor y = to_device(gpu, std::vector<T>(ny, garbage), "y"), dx = to_device(gpu, std::vector<T>(nx, garbage), "dx");
  op->forward(dx_in.device_raw(), y.device_raw(), false);
  expect_close(widened(to_host<T>(gpu, y)), exact(y_ref), "forward (inference)", storage_rtol<T>());
  if (s.kind == PoolKind::average) {  // no training forward: the direct backward
    op->backward(dy_in.device_raw(), dx.device_raw());
    expect_close(widened(to_host<T>(gpu, dx)), exact(dx_ref), "backward without a training forward", storage_rtol<T>());
  }
  op->forward(dx_in.device_raw(), y.device_raw(), true);
  expect_close(widened(to_host<T>(gpu, y)), exact(y_ref), "forward (training)", storage_rtol<T>());
  op->backward(dy_in.device_raw(), dx.device_raw());
  expect_close(widened(to_host<T>(gpu, dx)), exact(dx_ref), "backward", storage_rtol<T>());
}

class CudaPool : public CudaTest {};

TEST_F(CudaPool, F32MatchesTheCpuBackend) {
  for (const PoolShape& s : pool_shapes()) check_against_cpu<float>(*backend, s);
}

TEST_F(CudaPool, Bf16MatchesTheCpuBackend) {
  for (const PoolShape& s : pool_shapes()) check_against_cpu<bf16>(*backend, s);
}

TEST_F(CudaPool, F16MatchesTheCpuBackend) {
  for (const PoolShape& s : pool_shapes()) check_against_cpu<f16>(*backend, s);
}

TEST_F(CudaPool, NondeterministicMaxPoolingStillMatches) {
  BackendOptions o;
  o.kind = DeviceKind::cuda;
  o.deterministic = false;
  auto fast = make_backend(o);
  for (const PoolShape& s : pool_shapes()) check_against_cpu<float>(*fast, s);
}

TEST_F(CudaPool, DeterministicBackwardIsBitwiseRepeatable) {
  for (const PoolShape& s : pool_shapes()) {
    SCOPED_TRACE(s.to_string());
    const size_t nx = s.batch * s.in_h * s.in_w * s.channels, ny = s.batch * s.out_h() * s.out_w() * s.channels;
    auto op = backend->make_pool(s);
    const Tensor x = to_device(*backend, random_vec(nx, 3), "x"), dy = to_device(*backend, random_vec(ny, 4), "dy");
    Tensor y = backend->empty({static_cast<int64_t>(ny)}, DType::f32, "y");
    Tensor dx = backend->empty({static_cast<int64_t>(nx)}, DType::f32, "dx");
    op->forward(x.device_raw(), y.device_raw(), true);
    op->backward(dy.device_raw(), dx.device_raw());
    const std::vector<float> first = to_host<float>(*backend, dx);
    op->backward(dy.device_raw(), dx.device_raw());
    EXPECT_TRUE(first == to_host<float>(*backend, dx));
  }
}

TEST_F(CudaPool, OperatorChoicesNameTheShapes) {
  PoolShape sym = pool_shape(PoolKind::max, 2, 8, 8, 16, 3, 2, 1);
  PoolShape asym = pool_shape(PoolKind::average, 2, 7, 7, 16, 2, 2, 0);
  asym.pad_bottom = asym.pad_right = 1;
  auto a = backend->make_pool(sym);
  auto b = backend->make_pool(asym);
  const std::vector<std::string> lines = backend->operator_choices();
  auto has = [&](const std::string& line) { return std::find(lines.begin(), lines.end(), line) != lines.end(); };
  EXPECT_TRUE(has(sym.to_string() + ": cuDNN MAX_DETERMINISTIC"));
  EXPECT_TRUE(has(asym.to_string() + ": direct kernels (asymmetric padding)"));
}

// Every real cell -5: padding never wins a maximum, and an average divides by real cells only, on
// the cuDNN path (symmetric padding) and the direct one (asymmetric).
TEST_F(CudaPool, PaddingNeverWinsAndIsNotCounted) {
  for (PoolKind kind : {PoolKind::max, PoolKind::average}) {
    PoolShape asym = pool_shape(kind, 1, 5, 5, 3, 3, 2, 1);
    asym.pad_bottom = asym.pad_right = 2;
    for (const PoolShape& s : {pool_shape(kind, 1, 5, 5, 3, 3, 2, 1), asym}) {
      SCOPED_TRACE(s.to_string());
      auto op = backend->make_pool(s);
      const size_t ny = s.out_h() * s.out_w() * 3;
      const Tensor x = to_device(*backend, std::vector<float>(75, -5.0f), "x");
      Tensor y = backend->empty({static_cast<int64_t>(ny)}, DType::f32, "y");
      op->forward(x.device_raw(), y.device_raw(), true);
      for (float v : to_host<float>(*backend, y)) EXPECT_FLOAT_EQ(v, -5.0f);
    }
  }
}

TEST_F(CudaPool, MaxBackwardBeforeTrainingForwardThrows) {
  const PoolShape s = pool_shape(PoolKind::max, 1, 4, 4, 2, 2, 2, 0);
  auto op = backend->make_pool(s);
  const Tensor x = to_device(*backend, std::vector<float>(32, 0.5f), "x");
  const Tensor dy = to_device(*backend, std::vector<float>(8, 1.0f), "dy");
  Tensor y = backend->empty({8}, DType::f32, "y"), dx = backend->empty({32}, DType::f32, "dx");
  op->forward(x.device_raw(), y.device_raw(), false);
  EXPECT_THROW(op->backward(dy.device_raw(), dx.device_raw()), Error);
}

}  // namespace
}  // namespace scaletrain
