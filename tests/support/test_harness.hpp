// Test support shared by the backend op tests: reproducible random inputs and the comparison of an
// op's float output against a double-precision reference loop.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace scaletrain::testing {

using Vec = std::vector<float>;   // an op's input or output
using Ref = std::vector<double>;  // a reference loop's result

// n values uniform in [-1, 1), the same for the same seed.
inline Vec random_vec(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// max |got - ref| <= rtol * max |ref|, naming the first element out of tolerance.
inline void expect_close(const Vec& got, const Ref& ref, const std::string& what, double rtol = 1e-4) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  double scale = 0;
  for (double r : ref) scale = std::max(scale, std::abs(r));
  ASSERT_GT(scale, 0) << what << ": reference is all zeros, the test would prove nothing";
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_LE(std::abs(got[i] - ref[i]), rtol * scale)
        << what << " at element " << i << ": got " << got[i] << ", reference " << ref[i];
  }
}

}  // namespace scaletrain::testing
