// The CPU backend's inner product (with and without bias) against a double-precision reference:
// forward, backward-data and backward-weights, weights in PyTorch's [out, in] layout.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using testing::expect_close;
using testing::random_vec;
using testing::Ref;
using testing::Vec;

void check_inner_product(Backend& backend, const InnerProductShape& s) {
  SCOPED_TRACE(s.to_string());
  auto op = backend.make_inner_product(s);
  const int64_t N = s.batch, I = s.in_features, O = s.out_features;
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(N * I, 1 + 10 * round), w = random_vec(O * I, 2 + 10 * round);
    const Vec b = random_vec(O, 3 + 10 * round), dy = random_vec(N * O, 4 + 10 * round);
    Ref y(N * O), dx(N * I, 0.0), dw(O * I, 0.0), db(O, 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o) {
        double acc = s.bias ? b[o] : 0.0;
        const double g = dy[n * O + o];
        db[o] += g;
        for (int64_t i = 0; i < I; ++i) {
          acc += double(x[n * I + i]) * w[o * I + i];
          dx[n * I + i] += g * w[o * I + i];
          dw[o * I + i] += g * x[n * I + i];
        }
        y[n * O + o] = acc;
      }
    Vec gy(N * O, 1e30f), gdx(N * I, 1e30f), gdw(O * I, 1e30f), gdb(O, 1e30f);
    op->forward(x.data(), w.data(), s.bias ? b.data() : nullptr, gy.data());
    expect_close(gy, y, "forward");
    op->backward_data(dy.data(), w.data(), gdx.data());
    expect_close(gdx, dx, "backward_data");
    op->backward_weights(x.data(), dy.data(), gdw.data(), s.bias ? gdb.data() : nullptr);
    expect_close(gdw, dw, "backward_weights dw");
    if (s.bias) expect_close(gdb, db, "backward_weights db");
  }
}

InnerProductShape ip(int64_t batch, int64_t in, int64_t out, bool bias) {
  InnerProductShape s;
  s.batch = batch;
  s.in_features = in;
  s.out_features = out;
  s.bias = bias;
  return s;
}

class BackendInnerProduct : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = make_cpu_backend();
};

TEST_F(BackendInnerProduct, WithBias) {
  check_inner_product(*backend, ip(4, 37, 10, true));
  check_inner_product(*backend, ip(16, 784, 128, true));
}

// Without bias the bias gradient pointer may be null.
TEST_F(BackendInnerProduct, WithoutBias) {
  check_inner_product(*backend, ip(1, 64, 32, false));
  check_inner_product(*backend, ip(7, 3, 6, false));
}

// From 1024 rows (a pointwise convolution's pixels) the f32 forward runs on the transposed weights:
// odd sizes leave partial transposition tiles.
TEST_F(BackendInnerProduct, ManyRowsTransposeTheWeights) {
  check_inner_product(*backend, ip(1030, 37, 19, true));
  check_inner_product(*backend, ip(1024, 16, 33, false));
}

TEST_F(BackendInnerProduct, ImpossibleShapeThrowsNamingTheShape) {
  const InnerProductShape s = ip(4, 0, 10, true);
  try {
    backend->make_inner_product(s);
    FAIL() << "make_inner_product accepted " << s.to_string();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(s.to_string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace scaletrain
