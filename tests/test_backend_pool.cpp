// The CPU backend's max and average pooling (NHWC; padding never wins a max and is excluded from an
// average's divisor) against a double-precision reference, forward and backward; the direct max
// pooling (max_pool_direct.cpp) also on its own, at odd shapes, in f32, bf16 and f16, with ties.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/core/half.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using testing::expect_close;
using testing::pool_shape;
using testing::random_vec;
using testing::Ref;
using testing::Vec;

struct PoolReference {
  Ref y, dx;
  PoolReference(const PoolShape& s, const Vec& x, const Vec& dy) {
    const int64_t OH = s.out_h(), OW = s.out_w(), C = s.channels;
    y.assign(s.batch * OH * OW * C, 0.0);
    dx.assign(x.size(), 0.0);
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t c = 0; c < C; ++c) {
            const int64_t yi = ((n * OH + oh) * OW + ow) * C + c;
            std::vector<int64_t> cells;  // valid (unpadded) input cells of this window
            for (int64_t kh = 0; kh < s.kernel_h; ++kh)
              for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
                const int64_t ih = oh * s.stride_h - s.pad_top + kh, iw = ow * s.stride_w - s.pad_left + kw;
                if (ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w)
                  cells.push_back(((n * s.in_h + ih) * s.in_w + iw) * C + c);
              }
            if (s.kind == PoolKind::max) {
              int64_t best = cells.front();
              for (int64_t i : cells)
                if (x[i] > x[best]) best = i;
              y[yi] = x[best];
              dx[best] += dy[yi];
            } else {
              double sum = 0;
              for (int64_t i : cells) sum += x[i];
              y[yi] = sum / cells.size();
              for (int64_t i : cells) dx[i] += double(dy[yi]) / cells.size();
            }
          }
  }
};

void check_pool(Backend& backend, const PoolShape& s) {
  SCOPED_TRACE(s.to_string());
  auto op = backend.make_pool(s);
  const size_t nx = s.batch * s.in_h * s.in_w * s.channels, ny = s.batch * s.out_h() * s.out_w() * s.channels;
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(nx, 1 + 10 * round), dy = random_vec(ny, 2 + 10 * round);
    const PoolReference ref(s, x, dy);
    Vec y(ny, 1e30f), dx(nx, 1e30f);
    op->forward(x.data(), y.data(), /*training=*/false);
    expect_close(y, ref.y, "forward (inference)");
    std::fill(y.begin(), y.end(), 1e30f);
    op->forward(x.data(), y.data(), /*training=*/true);
    expect_close(y, ref.y, "forward (training)");
    op->backward(dy.data(), dx.data());
    expect_close(dx, ref.dx, "backward");
  }
}

class BackendPool : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = make_cpu_backend();
};

// Through make_pool: the backend's choice of max pooling (the direct op, see DirectMaxPool* below)
// and oneDNN's average pooling.
TEST_F(BackendPool, MaxTwoByTwoStrideTwo) {
  check_pool(*backend, pool_shape(PoolKind::max, 2, 8, 8, 3, 2, 2, 0));
  check_pool(*backend, pool_shape(PoolKind::max, 3, 28, 28, 6, 2, 2, 0));
  check_pool(*backend, pool_shape(PoolKind::max, 2, 10, 10, 8, 2, 2, 0));
  check_pool(*backend, pool_shape(PoolKind::max, 1, 28, 28, 32, 2, 2, 0));
}

TEST_F(BackendPool, MaxThreeByThreeStrideTwoPadded) {
  check_pool(*backend, pool_shape(PoolKind::max, 2, 7, 7, 10, 3, 2, 1));
  check_pool(*backend, pool_shape(PoolKind::max, 2, 9, 7, 4, 3, 2, 1));
  check_pool(*backend, pool_shape(PoolKind::max, 3, 8, 9, 16, 3, 2, 1));
}

TEST_F(BackendPool, AverageTwoByTwoStrideTwo) {
  check_pool(*backend, pool_shape(PoolKind::average, 2, 8, 8, 6, 2, 2, 0));
}

TEST_F(BackendPool, AverageThreeByThreeStrideTwoPadded) {
  check_pool(*backend, pool_shape(PoolKind::average, 2, 7, 7, 10, 3, 2, 1));
  check_pool(*backend, pool_shape(PoolKind::average, 1, 8, 8, 32, 3, 2, 1));
}

// Keras 'same' on an odd input: one row and column of padding at the bottom/right only.
TEST_F(BackendPool, AsymmetricSamePadding) {
  for (PoolKind kind : {PoolKind::max, PoolKind::average}) {
    PoolShape s = pool_shape(kind, 2, 7, 7, 3, 2, 2, 0);
    s.pad_bottom = s.pad_right = 1;
    ASSERT_EQ(s.out_h(), 4);
    check_pool(*backend, s);
  }
}

// The corner window of a 3x3 average with padding 1 holds 4 real cells: their mean, not sum / 9.
TEST_F(BackendPool, AverageExcludesPaddingFromTheDivisor) {
  const PoolShape s = pool_shape(PoolKind::average, 1, 4, 4, 1, 3, 2, 1);
  auto op = backend->make_pool(s);
  Vec x(16, 1.f), y(s.out_h() * s.out_w());
  op->forward(x.data(), y.data(), false);
  for (float v : y) EXPECT_FLOAT_EQ(v, 1.f);
}

// Padding is never the maximum, even when every real input is negative.
TEST_F(BackendPool, MaxIgnoresPadding) {
  const PoolShape s = pool_shape(PoolKind::max, 1, 4, 4, 1, 3, 2, 1);
  auto op = backend->make_pool(s);
  Vec x(16, -5.f), y(s.out_h() * s.out_w());
  op->forward(x.data(), y.data(), true);
  for (float v : y) EXPECT_FLOAT_EQ(v, -5.f);
}

// An evaluation forward between a training forward and its backward (the trainer never does it, a
// user's loop may) leaves backward routing dy through the training input's maxima.
TEST_F(BackendPool, InferenceForwardKeepsTheTrainingArgmax) {
  for (int64_t c : {6, 16}) {
    const PoolShape s = pool_shape(PoolKind::max, 2, 8, 8, c, 2, 2, 0);
    SCOPED_TRACE(s.to_string());
    auto op = backend->make_pool(s);
    const size_t nx = 2 * 8 * 8 * c, ny = 2 * 4 * 4 * c;
    const Vec x_train = random_vec(nx, 5), x_eval = random_vec(nx, 6), dy = random_vec(ny, 7);
    Vec y(ny), dx(nx);
    op->forward(x_train.data(), y.data(), /*training=*/true);
    op->forward(x_eval.data(), y.data(), /*training=*/false);
    op->backward(dy.data(), dx.data());
    expect_close(dx, PoolReference(s, x_train, dy).dx, "backward after an inference forward");
  }
}

TEST_F(BackendPool, MaxBackwardBeforeTrainingForwardThrows) {
  const PoolShape s = pool_shape(PoolKind::max, 1, 4, 4, 2, 2, 2, 0);
  auto op = backend->make_pool(s);
  Vec x(32, 0.5f), y(8), dy(8, 1.f), dx(32);
  op->forward(x.data(), y.data(), /*training=*/false);
  EXPECT_THROW(op->backward(dy.data(), dx.data()), Error);
}

// The direct max pooling itself, whatever make_pool picks, on storage type T. x and dy are rounded
// to T first, so the reference sees the values the op sees: forward and the backward of disjoint
// windows only copy values, so they must match exactly; overlapping windows add dy in T.
template <class T>
void check_direct_max_pool(PoolShape s, const Vec& x_float, const Vec& dy_float) {
  s.dtype = std::is_same_v<T, float> ? DType::f32 : std::is_same_v<T, bf16> ? DType::bf16 : DType::f16;
  SCOPED_TRACE(s.to_string());
  auto op = cpu::make_direct_max_pool(s);
  auto round = [](const Vec& v) {
    std::vector<T> stored(v.size());
    for (size_t i = 0; i < v.size(); ++i) stored[i] = from_float<T>(v[i]);
    return stored;
  };
  auto widen = [](const std::vector<T>& v) {
    Vec f(v.size());
    for (size_t i = 0; i < v.size(); ++i) f[i] = to_float(v[i]);
    return f;
  };
  const std::vector<T> x = round(x_float), dy = round(dy_float);
  const PoolReference ref(s, widen(x), widen(dy));
  std::vector<T> y(ref.y.size(), from_float<T>(1e4f)), dx(ref.dx.size(), from_float<T>(1e4f));
  op->forward(x.data(), y.data(), /*training=*/false);
  expect_close(widen(y), ref.y, "forward (inference)", 0.0);
  std::fill(y.begin(), y.end(), from_float<T>(1e4f));
  op->forward(x.data(), y.data(), /*training=*/true);
  expect_close(widen(y), ref.y, "forward (training)", 0.0);
  op->backward(dy.data(), dx.data());  // dx starts as 1e4 everywhere: every cell must be written
  const bool overlapping = s.stride_h < s.kernel_h || s.stride_w < s.kernel_w;
  const double rtol = !overlapping ? 0.0 : std::is_same_v<T, float> ? 1e-6 : std::is_same_v<T, bf16> ? 2e-2 : 4e-3;
  expect_close(widen(dx), ref.dx, "backward", rtol);
}

// The window shapes the op accepts: disjoint (2x2/2, 2x2/3 which skips cells, 'same' 2x2/2 on an odd
// input), overlapping (3x3/2 padded, 3x3/1 padded, 'same' 3x3/2 with padding only at the bottom/right).
std::vector<PoolShape> direct_pool_shapes(int64_t batch, int64_t h, int64_t w, int64_t c) {
  std::vector<PoolShape> shapes{pool_shape(PoolKind::max, batch, h, w, c, 2, 2, 0),
                                pool_shape(PoolKind::max, batch, h, w, c, 2, 3, 0),
                                pool_shape(PoolKind::max, batch, h, w, c, 3, 2, 1),
                                pool_shape(PoolKind::max, batch, h, w, c, 3, 1, 1)};
  PoolShape same2 = pool_shape(PoolKind::max, batch, h, w, c, 2, 2, 0);
  same2.pad_bottom = h % 2;
  same2.pad_right = w % 2;
  shapes.push_back(same2);
  PoolShape same3 = pool_shape(PoolKind::max, batch, h, w, c, 3, 2, 0);
  same3.pad_top = h % 2;  // Keras 'same' 3x3/2: padding 1 + 1 on odd sizes, 0 + 1 on even ones
  same3.pad_bottom = 1;
  same3.pad_left = w % 2;
  same3.pad_right = 1;
  shapes.push_back(same3);
  return shapes;
}

template <class T>
void check_direct_at_odd_shapes() {
  unsigned seed = 100;
  for (int64_t c : {1, 5, 6, 8, 9, 16, 17, 33, 128, 130})
    for (auto [batch, h, w] : {std::tuple<int64_t, int64_t, int64_t>{1, 7, 9}, {2, 13, 11}, {1, 8, 8}})
      for (const PoolShape& s : direct_pool_shapes(batch, h, w, c)) {
        const size_t nx = batch * h * w * c, ny = batch * s.out_h() * s.out_w() * c;
        const Vec x = random_vec(nx, ++seed);
        const Vec dy = random_vec(ny, ++seed);
        check_direct_max_pool<T>(s, x, dy);
      }
}

TEST(DirectMaxPool, OddShapesF32) { check_direct_at_odd_shapes<float>(); }
TEST(DirectMaxPool, OddShapesBF16) { check_direct_at_odd_shapes<bf16>(); }
TEST(DirectMaxPool, OddShapesF16) { check_direct_at_odd_shapes<f16>(); }

// Ties: inputs from {-1, 0, 1} make most windows hold equal maxima; the earliest cell in row-major
// window order wins (the reference's rule), forward and backward, in every storage type.
TEST(DirectMaxPool, TiesGoToTheFirstCellOfTheWindow) {
  for (int64_t c : {3, 17, 128})
    for (const PoolShape& s : direct_pool_shapes(2, 7, 9, c)) {
      Vec x = random_vec(2 * 7 * 9 * c, 7);
      for (float& v : x) v = std::round(v);
      const Vec dy = random_vec(2 * s.out_h() * s.out_w() * c, 8);
      check_direct_max_pool<float>(s, x, dy);
      check_direct_max_pool<bf16>(s, x, dy);
      check_direct_max_pool<f16>(s, x, dy);
    }
}

// A window of more than 256 cells (a global 17x17 pooling) takes the wider argmax.
TEST(DirectMaxPool, WindowsOfMoreThan256Cells) {
  const PoolShape s = pool_shape(PoolKind::max, 2, 17, 17, 5, 17, 1, 0);
  check_direct_max_pool<float>(s, random_vec(2 * 17 * 17 * 5, 3), random_vec(2 * 5, 4));
  check_direct_max_pool<bf16>(s, random_vec(2 * 17 * 17 * 5, 3), random_vec(2 * 5, 4));
}

// Padding is never the maximum, even when every real input is negative, in the direct op too.
TEST(DirectMaxPool, PaddingNeverWins) {
  for (int64_t c : {1, 16, 33}) {
    PoolShape s = pool_shape(PoolKind::max, 1, 5, 5, c, 3, 2, 1);
    check_direct_max_pool<float>(s, Vec(25 * c, -5.f), random_vec(9 * c, 2));
  }
}

TEST_F(BackendPool, ImpossibleShapeThrowsNamingTheShape) {
  for (const PoolShape& s :
       {pool_shape(PoolKind::max, 1, 2, 2, 3, 5, 1, 0), pool_shape(PoolKind::average, 1, 8, 8, 0, 2, 2, 0),
        pool_shape(PoolKind::average, 1, 8, 8, 3, 2, 2, 2)}) {
    try {
      backend->make_pool(s);
      ADD_FAILURE() << "make_pool accepted " << s.to_string();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(s.to_string()), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace scaletrain
