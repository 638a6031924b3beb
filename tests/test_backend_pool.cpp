// The CPU backend's max and average pooling (NHWC; padding never wins a max and is excluded from an
// average's divisor) against a double-precision reference, forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
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

// Channel counts that are not a multiple of 16 run the direct max pooling (its compile-time
// channel counts 1-4, 6, 8 and the generic loop); multiples of 16 run oneDNN.
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
