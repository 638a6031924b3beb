// The CUDA backend's cuBLASLt inner product against the CPU backend's on the same inputs (rounded to
// the storage type first, so both sides read the same values): forward, backward_data and
// backward_weights (dw, db) in f32, bf16 and f16, at odd shapes, with and without bias, and with
// parameters and gradients at unaligned offsets as in the model's flat buffers. Tolerances are
// relative to the largest reference value: f32 1e-5 (no TF32); bf16/f16 outputs one or two roundings
// of the storage type (the bias is rounded to it too, see cublaslt_inner_product.cpp); dw and db are
// f32 sums of the same products, 1e-4. Deterministic mode: repeated calls are bitwise equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/core/half.hpp"
#include "support/stored_values.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

using CudaInnerProduct = CudaTest;

InnerProductShape ip(int64_t batch, int64_t in, int64_t out, bool bias, DType dtype) {
  InnerProductShape s;
  s.batch = batch;
  s.in_features = in;
  s.out_features = out;
  s.bias = bias;
  s.dtype = dtype;
  return s;
}

// Outputs in the storage type (y, dx) and f32 gradients (dw, db).
struct Tolerance {
  double out, grad;
};
Tolerance tolerance(DType t) {
  if (t == DType::bf16) return {1.0 / 64, 1e-4};
  if (t == DType::f16) return {1.0 / 256, 1e-4};
  return {1e-5, 1e-5};
}

void expect_near_all(const Vec& got, const Vec& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  ASSERT_GT(scale, 0) << what << ": the reference is all zeros";
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), rtol * scale) << what << " at " << i << ": " << got[i] << " vs " << want[i];
}

// Device tensors of `n` elements placed `offset` elements into a larger buffer (0: a whole buffer).
Tensor device_at(Backend& b, int64_t n, DType t, int64_t offset, const std::string& name) {
  if (offset == 0) return b.empty({n}, t, name);
  return b.empty({n + offset}, t, name).view(offset, {n});
}

template <class T>
void upload_to(Backend& b, const Tensor& dst, const std::vector<T>& values) {
  Tensor src = to_device(b, values, "staging");
  b.copy_async(b.compute_stream(), dst, src);
  b.compute_stream().synchronize();
}

// The op of `gpu` against the CPU backend's on one set of random inputs. `param_offset` places w, b,
// dw and db that many elements into larger buffers (1: aligned to the element size only).
template <class T>
void check_against_cpu(Backend& gpu, const InnerProductShape& s, int64_t param_offset = 0) {
  SCOPED_TRACE(s.to_string() + (param_offset ? " with parameters at offset " + std::to_string(param_offset) : ""));
  const int64_t N = s.batch, I = s.in_features, O = s.out_features;
  const DType t = s.dtype;
  const std::vector<T> x = stored<T>(random_vec(N * I, 1)), w = stored<T>(random_vec(O * I, 2));
  const std::vector<T> dy = stored<T>(random_vec(N * O, 4));
  const Vec b = random_vec(O, 3);

  auto cpu = make_cpu_backend();
  auto cpu_op = cpu->make_inner_product(s);
  std::vector<T> y(N * O), dx(N * I);
  Vec dw(O * I), db(O);
  cpu_op->forward(x.data(), w.data(), s.bias ? b.data() : nullptr, y.data());
  cpu_op->backward_data(dy.data(), w.data(), dx.data());
  cpu_op->backward_weights(x.data(), dy.data(), dw.data(), s.bias ? db.data() : nullptr);

  auto op = gpu.make_inner_product(s);
  const Tensor gx = to_device(gpu, x, "x"), gdy = to_device(gpu, dy, "dy");
  const Tensor gw = device_at(gpu, O * I, t, param_offset, "w"), gb = device_at(gpu, O, DType::f32, param_offset, "b");
  upload_to(gpu, gw, w);
  upload_to(gpu, gb, b);
  const Tensor gy = gpu.empty({N * O}, t, "y"), gdx = gpu.empty({N * I}, t, "dx");
  const Tensor gdw = device_at(gpu, O * I, DType::f32, param_offset, "dw");
  const Tensor gdb = device_at(gpu, O, DType::f32, param_offset, "db");
  op->forward(dptr<T>(gx), dptr<T>(gw), s.bias ? dptr<float>(gb) : nullptr, dptr<T>(gy));
  op->backward_data(dptr<T>(gdy), dptr<T>(gw), dptr<T>(gdx));
  op->backward_weights(dptr<T>(gx), dptr<T>(gdy), dptr<float>(gdw), s.bias ? dptr<float>(gdb) : nullptr);

  const Tolerance tol = tolerance(t);
  expect_near_all(widened(to_host<T>(gpu, gy)), widened(y), tol.out, "forward y");
  expect_near_all(widened(to_host<T>(gpu, gdx)), widened(dx), tol.out, "backward_data dx");
  expect_near_all(to_host<float>(gpu, gdw), dw, tol.grad, "backward_weights dw");
  if (s.bias) expect_near_all(to_host<float>(gpu, gdb), db, tol.grad, "backward_weights db");
}

// Batch 1, in > out, in < out, features that are not multiples of 16, one feature, and one larger.
template <class T>
void check_shapes(Backend& gpu) {
  const DType t = dtype_of<T>::value;
  for (const InnerProductShape& s :
       {ip(1, 37, 10, true, t), ip(13, 50, 17, true, t), ip(7, 3, 26, false, t), ip(5, 17, 33, true, t),
        ip(3, 1, 1, true, t), ip(64, 256, 96, false, t), ip(96, 200, 120, true, t)})
    check_against_cpu<T>(gpu, s);
}

TEST_F(CudaInnerProduct, F32MatchesCpu) { check_shapes<float>(*backend); }
TEST_F(CudaInnerProduct, Bf16MatchesCpu) { check_shapes<bf16>(*backend); }
TEST_F(CudaInnerProduct, F16MatchesCpu) { check_shapes<f16>(*backend); }

// Views into flat parameter and gradient buffers are aligned to their element size only: the op
// takes its second algorithm (see cublaslt_inner_product.cpp) and still matches.
TEST_F(CudaInnerProduct, UnalignedParameterViewsMatchCpu) {
  check_against_cpu<float>(*backend, ip(9, 40, 24, true, DType::f32), 1);
  check_against_cpu<bf16>(*backend, ip(9, 40, 24, true, DType::bf16), 1);
  check_against_cpu<f16>(*backend, ip(9, 40, 24, true, DType::f16), 3);
}

// allow_tf32 = false (the default, said explicitly here): f32 within 1e-5 of the CPU.
TEST_F(CudaInnerProduct, F32WithoutTf32IsWithin1e5OfCpu) {
  backend.reset();
  BackendOptions o;
  o.kind = DeviceKind::cuda;
  o.allow_tf32 = false;
  backend = make_backend(o);
  check_against_cpu<float>(*backend, ip(32, 257, 129, true, DType::f32));
  bool logged = false;
  for (const std::string& line : backend->operator_choices()) logged |= line.find("f32 (no tf32)") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(CudaInnerProduct, Tf32WhenAllowed) {
  backend.reset();
  BackendOptions o;
  o.kind = DeviceKind::cuda;
  o.allow_tf32 = true;
  backend = make_backend(o);
  auto op = backend->make_inner_product(ip(16, 64, 32, true, DType::f32));
  bool logged = false;
  for (const std::string& line : backend->operator_choices())
    logged |= line.find("tf32 tensor cores") != std::string::npos;
  EXPECT_TRUE(logged);
}

// Deterministic mode (the default): no split-K, one algorithm per shape, so repeated calls on the
// same inputs give the same bits. Large enough (k = batch 512) that split-K would be attractive.
template <class T>
void check_repeatable(Backend& gpu) {
  const InnerProductShape s = ip(512, 300, 70, true, dtype_of<T>::value);
  SCOPED_TRACE(s.to_string());
  auto op = gpu.make_inner_product(s);
  const Tensor x = to_device(gpu, stored<T>(random_vec(512 * 300, 5)), "x");
  const Tensor dy = to_device(gpu, stored<T>(random_vec(512 * 70, 6)), "dy");
  const Tensor w = to_device(gpu, stored<T>(random_vec(70 * 300, 7)), "w");
  const Tensor b = to_device(gpu, random_vec(70, 8), "b");
  std::vector<std::vector<float>> dws, dbs;
  std::vector<std::vector<T>> ys;
  for (int round = 0; round < 2; ++round) {
    const Tensor dw = gpu.empty({70 * 300}, DType::f32, "dw"), db = gpu.empty({70}, DType::f32, "db");
    const Tensor y = gpu.empty({512 * 70}, dtype_of<T>::value, "y");
    op->forward(dptr<T>(x), dptr<T>(w), dptr<float>(b), dptr<T>(y));
    op->backward_weights(dptr<T>(x), dptr<T>(dy), dptr<float>(dw), dptr<float>(db));
    dws.push_back(to_host<float>(gpu, dw));
    dbs.push_back(to_host<float>(gpu, db));
    ys.push_back(to_host<T>(gpu, y));
  }
  EXPECT_EQ(std::memcmp(dws[0].data(), dws[1].data(), dws[0].size() * sizeof(float)), 0) << "dw differs";
  EXPECT_EQ(std::memcmp(dbs[0].data(), dbs[1].data(), dbs[0].size() * sizeof(float)), 0) << "db differs";
  EXPECT_EQ(std::memcmp(ys[0].data(), ys[1].data(), ys[0].size() * sizeof(T)), 0) << "y differs";
}

TEST_F(CudaInnerProduct, DeterministicBackwardWeightsIsBitwiseRepeatable) {
  check_repeatable<float>(*backend);
  check_repeatable<bf16>(*backend);
  check_repeatable<f16>(*backend);
}

// Not deterministic: split-K may be chosen; results still match.
TEST_F(CudaInnerProduct, NondeterministicModeMatchesCpu) {
  backend.reset();
  BackendOptions o;
  o.kind = DeviceKind::cuda;
  o.deterministic = false;
  backend = make_backend(o);
  check_against_cpu<float>(*backend, ip(512, 40, 24, true, DType::f32));
  check_against_cpu<bf16>(*backend, ip(512, 40, 24, true, DType::bf16));
  bool logged = false;
  for (const std::string& line : backend->operator_choices())
    logged |= line.find("split-K allowed") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(CudaInnerProduct, OperatorChoicesNameEveryDirection) {
  const InnerProductShape s = ip(8, 37, 10, true, DType::bf16);
  auto op = backend->make_inner_product(s);
  const std::vector<std::string> lines = backend->operator_choices();
  ASSERT_FALSE(lines.empty());
  for (const char* label : {"dense fwd ", "dense bwd-data ", "dense bwd-weights "}) {
    bool found = false;
    for (const std::string& line : lines)
      found |= line.rfind(label + s.to_string() + ": cuBLASLt heuristic #", 0) == 0 &&
               line.find("MiB workspace") != std::string::npos && line.find("deterministic") != std::string::npos;
    EXPECT_TRUE(found) << label;
  }
}

TEST_F(CudaInnerProduct, ImpossibleShapeThrowsNamingTheShape) {
  const InnerProductShape s = ip(4, 0, 10, true, DType::f32);
  const std::string err = error_of([&] { backend->make_inner_product(s); });
  EXPECT_NE(err.find(s.to_string()), std::string::npos) << err;
}

}  // namespace
