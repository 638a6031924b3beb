// Test support shared by the unit tests: reproducible random inputs, the comparison of an op's float
// output against a double-precision reference loop, and the message of an expected Error.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "scaletrain/core/error.hpp"

namespace scaletrain::testing {

// The message of the scaletrain::Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

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
