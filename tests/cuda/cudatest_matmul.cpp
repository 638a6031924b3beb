// The CUDA backend's matmul family against the CPU backend's on the same stored inputs: strided
// batches in every transpose (attention's products), alpha, the gelu epilogue (aux the pre-activation,
// C the exact GELU), an f32 output from bf16/f16 operands, head slices of one buffer (leading
// dimensions and batch strides wider than a matrix), a bias into f32, and a dense layer's three
// products (lowered to the inner-product op: the forward with its bias, dX, dW with the bias
// gradient). Tolerances relative to the largest reference value: f32 1e-5 (no TF32), a 16-bit output
// one or two roundings, f32 outputs of 16-bit operands 1e-4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/backend/inner_product_matmul.hpp"
#include "scaletrain/core/half.hpp"
#include "support/stored_values.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

using CudaMatmul = CudaTest;

MatmulShape shape(int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb, DType t) {
  MatmulShape s;
  s.batch = batch;
  s.m = m;
  s.n = n;
  s.k = k;
  s.trans_a = ta;
  s.trans_b = tb;
  s.dtype = s.out_dtype = t;
  return s;
}

double tolerance(const MatmulShape& s) {
  if (s.out_dtype == DType::bf16) return 1.0 / 64;
  if (s.out_dtype == DType::f16) return 1.0 / 256;
  return s.dtype == DType::f32 ? 1e-5 : 1e-4;
}

void expect_near_all(const Vec& got, const Vec& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
  ASSERT_GT(scale, 0) << what << ": the reference is all zeros";
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - want[i]), rtol * scale) << what << " at " << i << ": " << got[i] << " vs " << want[i];
}

// The elements one shape's A, B or C spans: batch - 1 strides, then stored_rows - 1 rows of ld.
int64_t span(int64_t batch, int64_t stride, int64_t stored_rows, int64_t ld, int64_t cols) {
  return (batch - 1) * stride + (stored_rows - 1) * ld + cols;
}

// C (and aux) in the output type O from operands of type T, on both backends; C and aux start as
// zeros, so elements between the rows compare as zeros on both sides.
template <class T, class O>
void check_against_cpu(Backend& gpu, const MatmulShape& s) {
  SCOPED_TRACE(s.to_string());
  const int64_t na = s.trans_a ? span(s.batch, s.stride_a_or(), s.k, s.lda_or(), s.m)
                               : span(s.batch, s.stride_a_or(), s.m, s.lda_or(), s.k);
  const int64_t nb = s.trans_b ? span(s.batch, s.stride_b_or(), s.n, s.ldb_or(), s.k)
                               : span(s.batch, s.stride_b_or(), s.k, s.ldb_or(), s.n);
  const int64_t nc = span(s.batch, s.stride_c_or(), s.m, s.ldc_or(), s.n);
  const bool sums = s.epilogue == MatmulEpilogue::bias_gradient, gelu = s.epilogue == MatmulEpilogue::gelu;
  const int64_t naux = sums ? s.m : nc;
  const std::vector<T> a = stored<T>(random_vec(na, 1)), b = stored<T>(random_vec(nb, 2));
  const Vec bias = random_vec(s.n, 3);

  auto cpu = make_cpu_backend();
  std::vector<O> c(nc, from_float<O>(0.0f));
  Vec aux_f32(sums ? s.m : 0, 0.0f);
  std::vector<O> aux(gelu ? nc : 0, from_float<O>(0.0f));
  void* aux_ptr = sums ? static_cast<void*>(aux_f32.data()) : gelu ? static_cast<void*>(aux.data()) : nullptr;
  cpu->make_matmul(s)->run(a.data(), b.data(), s.bias ? bias.data() : nullptr, c.data(), aux_ptr);

  auto op = gpu.make_matmul(s);
  const Tensor ga = to_device(gpu, a, "a"), gb = to_device(gpu, b, "b"), gbias = to_device(gpu, bias, "bias");
  const Tensor gc = to_device(gpu, std::vector<O>(nc, from_float<O>(0.0f)), "c");
  const Tensor gaux =
      sums ? to_device(gpu, Vec(naux, 0.0f), "aux") : to_device(gpu, std::vector<O>(naux, from_float<O>(0.0f)), "aux");
  op->run(dptr<T>(ga), dptr<T>(gb), s.bias ? dptr<float>(gbias) : nullptr, dptr<O>(gc),
          s.epilogue == MatmulEpilogue::none ? nullptr : gaux.device_raw());
  const double tol = tolerance(s);
  expect_near_all(widened(to_host<O>(gpu, gc)), widened(c), tol, "C");
  if (gelu) expect_near_all(widened(to_host<O>(gpu, gaux)), widened(aux), tol, "aux (the pre-activation)");
  if (sums) expect_near_all(to_host<float>(gpu, gaux), aux_f32, 1e-4, "the bias gradient");
}

template <class T>
void check_family(Backend& gpu) {
  const DType t = dtype_of<T>::value;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) check_against_cpu<T, T>(gpu, shape(5, 7, 6, 9, ta, tb, t));
  MatmulShape scores = shape(24, 65, 65, 32, false, true, t);  // attention's q k^T / sqrt(D)
  scores.alpha = 0.1767767f;
  check_against_cpu<T, T>(gpu, scores);
  MatmulShape gelu = shape(1, 24, 48, 16, false, false, t);
  gelu.epilogue = MatmulEpilogue::gelu;
  check_against_cpu<T, T>(gpu, gelu);
  // Heads side by side in [tokens, heads * dim] rows: each (head) matrix a slice of one buffer.
  MatmulShape heads = shape(3, 10, 10, 8, false, true, t);
  heads.lda = heads.ldb = 24;
  heads.stride_a = heads.stride_b = 8;
  check_against_cpu<T, T>(gpu, heads);
  MatmulShape wide = shape(2, 9, 10, 11, false, false, t);
  wide.out_dtype = DType::f32;
  wide.bias = true;
  check_against_cpu<T, float>(gpu, wide);
  // A dense layer's three products: 12 rows, 30 features in, 18 out.
  MatmulShape fwd = shape(1, 12, 18, 30, false, true, t), data = shape(1, 12, 30, 18, false, false, t);
  fwd.bias = true;
  MatmulShape weights = shape(1, 18, 30, 12, true, false, t);
  weights.out_dtype = DType::f32;
  weights.epilogue = MatmulEpilogue::bias_gradient;
  ASSERT_TRUE(inner_product_form(fwd) && inner_product_form(data) && inner_product_form(weights));
  check_against_cpu<T, T>(gpu, fwd);
  check_against_cpu<T, T>(gpu, data);
  check_against_cpu<T, float>(gpu, weights);
}

TEST_F(CudaMatmul, F32MatchesCpu) { check_family<float>(*backend); }
TEST_F(CudaMatmul, Bf16MatchesCpu) { check_family<bf16>(*backend); }
TEST_F(CudaMatmul, F16MatchesCpu) { check_family<f16>(*backend); }

// What cuda refuses by name: a bias into a 16-bit output outside a dense layer's forward, and the
// bias gradient outside a dense layer's weight gradient.
TEST_F(CudaMatmul, UnsupportedEpiloguesAreRefusedByName) {
  MatmulShape padded = shape(1, 6, 4, 5, false, true, DType::bf16);
  padded.bias = true;
  padded.ldc = 8;
  EXPECT_NE(error_of([&] { backend->make_matmul(padded); }).find("a bias needs an f32 output"), std::string::npos);
  MatmulShape sums = shape(1, 6, 4, 5, false, false, DType::f32);
  sums.epilogue = MatmulEpilogue::bias_gradient;
  EXPECT_NE(error_of([&] { backend->make_matmul(sums); }).find("the bias gradient epilogue runs in a dense layer's"),
            std::string::npos);
}

}  // namespace
