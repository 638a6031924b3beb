// The matmul op family (backend/ops.hpp) on cpu and sim against a float64 loop over the same stored
// values: plain and transposed operands, strided batches with leading dimensions wider than the rows
// (the gaps of C left as they were), alpha, the bias, the gelu epilogue (aux the pre-activation, C its
// exact GELU), the bias gradient epilogue (aux the sums of op(A) over k), f32 and bf16 operands, bf16
// into f32, and shapes the family rejects by name. A dense layer's three products run on the backend's
// inner-product op (inner_product_form), every other shape on the general matmul: both are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/inner_product_matmul.hpp"
#include "support/device_tensors.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using testing::backend_of;
using testing::error_of;
using testing::normal_values;
using testing::to_host;
using testing::values_on_device;

// The values `dtype` stores for v (the reference multiplies what the op reads).
std::vector<float> stored(std::vector<float> v, DType dtype) {
  for (float& x : v)
    x = dtype == DType::bf16 ? to_float(from_float<bf16>(x)) : dtype == DType::f16 ? to_float(from_float<f16>(x)) : x;
  return v;
}

// Every element index of A, B or C a shape's batch touches is below this.
int64_t span(int64_t batch, int64_t stride, int64_t rows, int64_t ld, int64_t cols) {
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

std::vector<float> device_values(Backend& b, const Tensor& t) {
  if (t.dtype() == DType::f32) return to_host<float>(b, t);
  std::vector<float> out;
  if (t.dtype() == DType::f16)
    for (f16 v : to_host<f16>(b, t)) out.push_back(to_float(v));
  else
    for (bf16 v : to_host<bf16>(b, t)) out.push_back(to_float(v));
  return out;
}

void check_matmul(DeviceKind kind, const MatmulShape& s) {
  SCOPED_TRACE(s.to_string());
  const auto backend = backend_of(kind);
  auto op = backend->make_matmul(s);
  const int64_t na = s.trans_a ? span(s.batch, s.stride_a_or(), s.k, s.lda_or(), s.m)
                               : span(s.batch, s.stride_a_or(), s.m, s.lda_or(), s.k);
  const int64_t nb = s.trans_b ? span(s.batch, s.stride_b_or(), s.n, s.ldb_or(), s.k)
                               : span(s.batch, s.stride_b_or(), s.k, s.ldb_or(), s.n);
  const int64_t nc = span(s.batch, s.stride_c_or(), s.m, s.ldc_or(), s.n);
  const std::vector<float> a = stored(normal_values(na, 0.0f, 1.0f, 11), s.dtype);
  const std::vector<float> b = stored(normal_values(nb, 0.0f, 1.0f, 12), s.dtype);
  const std::vector<float> bias = normal_values(s.n, 0.0f, 1.0f, 13);
  const std::vector<float> sentinel(static_cast<size_t>(nc), 7.0f);
  const Tensor da = values_on_device(*backend, {na}, a, s.dtype), db = values_on_device(*backend, {nb}, b, s.dtype);
  const Tensor dbias = values_on_device(*backend, {s.n}, bias, DType::f32);
  const Tensor dc = values_on_device(*backend, {nc}, sentinel, s.out_dtype);
  const bool gelu = s.epilogue == MatmulEpilogue::gelu, sums = s.epilogue == MatmulEpilogue::bias_gradient;
  const Tensor daux = sums ? values_on_device(*backend, {s.m}, std::vector<float>(s.m, 7.0f), DType::f32)
                           : values_on_device(*backend, {nc}, sentinel, s.out_dtype);
  op->run(da.device_raw(), db.device_raw(), s.bias ? dbias.device_data<float>() : nullptr, dc.device_raw(),
          s.epilogue != MatmulEpilogue::none ? daux.device_raw() : nullptr);
  const std::vector<float> c = device_values(*backend, dc), aux = device_values(*backend, daux);
  for (int64_t i = 0; sums && i < s.m; ++i) {
    double sum = 0, mag = 0;
    for (int64_t l = 0; l < s.k; ++l) {
      const double av = a[s.trans_a ? l * s.lda_or() + i : i * s.lda_or() + l];
      sum += av;
      mag += std::fabs(av);
    }
    ASSERT_NEAR(aux[i], sum, 1e-5 * mag + 1e-6) << "bias gradient at row " << i;
  }
  // Each output's error bound: f32 accumulation over k products, then the output's rounding.
  const double out_eps = s.out_dtype == DType::bf16 ? 1.0 / 256 : s.out_dtype == DType::f16 ? 1.0 / 2048 : 1e-6;
  std::vector<bool> written(static_cast<size_t>(nc), false);
  for (int64_t p = 0; p < s.batch; ++p)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0, mag = 0;
        for (int64_t l = 0; l < s.k; ++l) {
          const double av = a[p * s.stride_a_or() + (s.trans_a ? l * s.lda_or() + i : i * s.lda_or() + l)];
          const double bv = b[p * s.stride_b_or() + (s.trans_b ? j * s.ldb_or() + l : l * s.ldb_or() + j)];
          acc += av * bv;
          mag += std::fabs(av * bv);
        }
        double pre = s.alpha * acc + (s.bias ? bias[j] : 0.0);
        mag = std::fabs(s.alpha) * mag + (s.bias ? std::fabs(bias[j]) : 0.0);
        const int64_t at = p * s.stride_c_or() + i * s.ldc_or() + j;
        written[at] = true;
        const double tol = 1e-5 * mag + out_eps * std::fabs(pre) + 1e-6;
        if (gelu) {
          ASSERT_NEAR(aux[at], pre, tol) << "aux at batch " << p << ", row " << i << ", column " << j;
          const double y = 0.5 * aux[at] * (1.0 + std::erf(aux[at] / std::sqrt(2.0)));
          ASSERT_NEAR(c[at], y, 1e-6 + out_eps * std::fabs(y)) << "gelu at batch " << p << ", row " << i;
        } else {
          ASSERT_NEAR(c[at], pre, tol) << "at batch " << p << ", row " << i << ", column " << j;
        }
      }
  for (int64_t e = 0; e < nc; ++e)
    if (!written[e]) {
      ASSERT_EQ(c[e], 7.0f) << "C's gap at element " << e << " was written";
    }
}

MatmulShape shape(int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb, DType dtype = DType::f32) {
  MatmulShape s;
  s.batch = batch;
  s.m = m;
  s.n = n;
  s.k = k;
  s.trans_a = ta;
  s.trans_b = tb;
  s.dtype = s.out_dtype = dtype;
  return s;
}

class Matmul : public ::testing::TestWithParam<std::tuple<DeviceKind, DType>> {
 protected:
  DeviceKind kind() const { return std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
};

TEST_P(Matmul, EveryTransposeOfABatch) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) check_matmul(kind(), shape(5, 7, 6, 9, ta, tb, dtype()));
}

TEST_P(Matmul, AlphaScalesTheProduct) {
  MatmulShape s = shape(6, 17, 17, 8, false, true, dtype());
  s.alpha = 0.3535f;
  check_matmul(kind(), s);
}

// A dense layer's forward (the inner-product op) and, with C's rows padded, the general matmul.
TEST_P(Matmul, BiasOnEveryRow) {
  MatmulShape s = shape(1, 33, 19, 40, false, true, dtype());
  s.bias = true;
  check_matmul(kind(), s);
  s.ldc = 23;
  check_matmul(kind(), s);
}

// A dense layer's weight gradient dW = dY^T X with db (the inner-product op's backward_weights), then
// the general matmul's host pass: A not transposed, and A^T read from padded rows.
TEST_P(Matmul, BiasGradientSumsOpAOverK) {
  MatmulShape s = shape(1, 13, 21, 37, true, false, dtype());
  s.out_dtype = DType::f32;
  s.epilogue = MatmulEpilogue::bias_gradient;
  ASSERT_TRUE(inner_product_form(s).has_value());
  check_matmul(kind(), s);
  s.trans_a = false;
  check_matmul(kind(), s);
  s.trans_a = true;
  s.lda = 17;
  ASSERT_FALSE(inner_product_form(s).has_value());
  check_matmul(kind(), s);
}

// A dense layer's backward-data product, dX = dY W.
TEST_P(Matmul, DenseBackwardData) {
  const MatmulShape s = shape(1, 12, 30, 18, false, false, dtype());
  ASSERT_TRUE(inner_product_form(s).has_value());
  check_matmul(kind(), s);
}

TEST_P(Matmul, GeluEpilogueKeepsItsPreActivation) {
  MatmulShape s = shape(1, 24, 48, 16, false, true, dtype());
  s.bias = true;
  s.epilogue = MatmulEpilogue::gelu;
  check_matmul(kind(), s);
}

// Operands inside wider rows and batches apart by more than a matrix; C's row gaps are not written.
TEST_P(Matmul, StridesAndLeadingDimensions) {
  MatmulShape s = shape(3, 5, 4, 6, true, false, dtype());
  s.lda = 9;  // A stored [k, lda]
  s.ldb = 7;
  s.ldc = 6;
  s.stride_a = 6 * 9 + 3;
  s.stride_b = 6 * 7 + 1;
  s.stride_c = 5 * 6 + 2;
  check_matmul(kind(), s);
}

TEST_P(Matmul, IntoF32) {
  MatmulShape s = shape(2, 9, 10, 11, false, false, dtype());
  s.out_dtype = DType::f32;
  check_matmul(kind(), s);
}

// The three products of y = x w^T + b over 6 rows, 5 features in, 4 out, as inner_product_form reads them.
TEST(MatmulShapes, DenseProductsAreInnerProductDirections) {
  MatmulShape fwd = shape(1, 6, 4, 5, false, true, DType::bf16);
  fwd.bias = true;
  auto f = inner_product_form(fwd);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->direction, InnerProductDirection::forward);
  EXPECT_EQ(f->shape.to_string(), "inner_product{batch 6, in 5, out 4, bias, bf16}");
  auto d = inner_product_form(shape(1, 6, 5, 4, false, false, DType::bf16));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->direction, InnerProductDirection::backward_data);
  EXPECT_EQ(d->shape.to_string(), "inner_product{batch 6, in 5, out 4, bf16}");
  MatmulShape w = shape(1, 4, 5, 6, true, false, DType::bf16);
  w.out_dtype = DType::f32;
  w.epilogue = MatmulEpilogue::bias_gradient;
  auto g = inner_product_form(w);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->direction, InnerProductDirection::backward_weights);
  EXPECT_EQ(g->shape.to_string(), "inner_product{batch 6, in 5, out 4, bias, bf16}");
  // Not a dense layer's: a batch, alpha, a gelu epilogue, padded rows, dW in bf16, a transposed dY.
  MatmulShape batched = fwd, scaled = fwd, gelu = fwd, padded = fwd, narrow_dw = w, both = w;
  batched.batch = 2;
  scaled.alpha = 0.5f;
  gelu.epilogue = MatmulEpilogue::gelu;
  padded.ldb = 7;
  narrow_dw.out_dtype = DType::bf16;
  narrow_dw.epilogue = MatmulEpilogue::none;
  both.trans_b = true;
  for (const MatmulShape& s : {batched, scaled, gelu, padded, narrow_dw, both})
    EXPECT_FALSE(inner_product_form(s).has_value()) << s.to_string();
}

// Those three run on the kernels make_inner_product chose; the rest on the general matmul.
TEST(MatmulShapes, DenseProductsRunOnTheInnerProductOp) {
  for (DeviceKind kind : {DeviceKind::cpu, DeviceKind::sim}) {
    const auto backend = backend_of(kind);
    MatmulShape fwd = shape(1, 6, 4, 5, false, true);
    fwd.bias = true;
    const std::string inner = backend->make_inner_product({6, 5, 4, true, DType::f32})->implementation();
    EXPECT_EQ(backend->make_matmul(fwd)->implementation(), inner);
    fwd.ldc = 8;
    EXPECT_EQ(backend->make_matmul(fwd)->implementation(), "oneDNN matmul");
  }
}

std::string matmul_name(const ::testing::TestParamInfo<Matmul::ParamType>& info) {
  return std::string(std::get<0>(info.param) == DeviceKind::cpu ? "cpu_" : "sim_") +
         std::string(dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Backends, Matmul,
                         ::testing::Combine(::testing::Values(DeviceKind::cpu, DeviceKind::sim),
                                            ::testing::Values(DType::f32, DType::bf16, DType::f16)),
                         matmul_name);

TEST(MatmulShapes, InvalidShapesAreRejectedByName) {
  const auto backend = backend_of(DeviceKind::cpu);
  MatmulShape zero = shape(1, 0, 3, 4, false, false);
  EXPECT_NE(error_of([&] { backend->make_matmul(zero); }).find("invalid matmul matmul{batch 1, 0x3x4"),
            std::string::npos);
  MatmulShape narrow = shape(1, 3, 3, 4, false, false);
  narrow.lda = 2;
  EXPECT_NE(error_of([&] { backend->make_matmul(narrow); }).find("a leading dimension is shorter"), std::string::npos);
  MatmulShape mixed = shape(1, 3, 3, 4, false, false, DType::bf16);
  mixed.out_dtype = DType::f16;
  EXPECT_NE(error_of([&] { backend->make_matmul(mixed); }).find("the output their type or f32"), std::string::npos);
  MatmulShape sums = shape(2, 3, 3, 4, true, false);
  sums.epilogue = MatmulEpilogue::bias_gradient;
  EXPECT_NE(error_of([&] { backend->make_matmul(sums); }).find("one matrix (batch 1) with an f32 output"),
            std::string::npos);
  sums = shape(1, 3, 3, 4, true, false, DType::bf16);
  sums.epilogue = MatmulEpilogue::bias_gradient;
  EXPECT_NE(error_of([&] { backend->make_matmul(sums); })
                .find("matmul{batch 1, 3x3x4, A^T, B, bias gradient, bf16 -> bf16}"),
            std::string::npos);
  MatmulShape gelu = shape(1, 3, 3, 4, false, false);
  gelu.epilogue = MatmulEpilogue::gelu;
  auto op = backend->make_matmul(gelu);
  const Tensor a = backend->zeros({12}, DType::f32, "a"), b = backend->zeros({12}, DType::f32, "b");
  Tensor c = backend->zeros({9}, DType::f32, "c");
  EXPECT_NE(error_of([&] { op->run(a.device_raw(), b.device_raw(), nullptr, c.device_raw(), nullptr); })
                .find("the gelu epilogue needs the aux buffer"),
            std::string::npos);
}

}  // namespace
}  // namespace scaletrain
