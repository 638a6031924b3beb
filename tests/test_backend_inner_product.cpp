// The CPU backend's inner product (with and without bias) against a double-precision reference:
// forward, backward-data and backward-weights, weights in PyTorch's [out, in] layout.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "scaletrain/backend/backend.hpp"

namespace scaletrain {
namespace {

using Vec = std::vector<float>;
using Ref = std::vector<double>;

Vec random_vec(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// max |got - ref| <= rtol * max |ref|, naming the first element out of tolerance.
void expect_close(const Vec& got, const Ref& ref, const std::string& what, double rtol = 1e-4) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double scale = 0;
  for (double r : ref) scale = std::max(scale, std::abs(r));
  ASSERT_GT(scale, 0) << what << ": reference is all zeros, the test would prove nothing";
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_LE(std::abs(got[i] - ref[i]), rtol * scale)
        << what << " at element " << i << ": got " << got[i] << ", reference " << ref[i];
  }
}

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
