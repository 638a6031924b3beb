// Test support for ops over storage types (float, bf16, f16): values rounded to T and widened back,
// inputs without ties for a maximum, and the comparison tolerance of each type (relative to the
// largest reference value, as testing::expect_close takes it).
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>
#include <vector>

#include "scaletrain/core/half.hpp"
#include "support/test_harness.hpp"

namespace scaletrain::testing {

template <class T>
std::vector<T> stored(const Vec& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = from_float<T>(v[i]);
  return out;
}

template <class T>
Vec widened(const std::vector<T>& v) {
  Vec out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

template <class T>
Ref exact(const std::vector<T>& v) {
  Ref out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

// n distinct values, exact in bf16 and f16 (7 fraction bits, exponents -8 to -8 + n / 128),
// alternating in sign, shuffled: no maximum has a tie for two implementations to break differently.
inline Vec distinct_values(size_t n, unsigned seed) {
  Vec v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = (1.0f + static_cast<float>(i % 128) / 128.0f) * std::ldexp(1.0f, static_cast<int>(i / 128) - 8) *
           (i % 2 ? -1.0f : 1.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

// Two implementations that each round a result to T once or twice (a bias added after rounding)
// agree to this, relative to the largest value.
template <class T>
double storage_rtol() {
  if constexpr (std::is_same_v<T, bf16>) return 2e-2;
  if constexpr (std::is_same_v<T, f16>) return 4e-3;
  return 1e-4;
}

}  // namespace scaletrain::testing
