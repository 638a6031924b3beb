// Test support shared by the unit tests: reproducible random inputs (uniform and normal), the comparison of an op's
// float output against a double-precision reference loop, and the message of an expected Error.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/ops.hpp"
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

// A square-kernel convolution shape with equal strides and padding on every side.
inline ConvShape conv_shape(int64_t batch, int64_t h, int64_t w, int64_t in_c, int64_t out_c, int64_t k, int64_t stride,
                            int64_t pad, int64_t groups = 1, bool bias = true) {
  ConvShape s;
  s.batch = batch;
  s.in_h = h;
  s.in_w = w;
  s.in_c = in_c;
  s.out_c = out_c;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
  s.groups = groups;
  s.bias = bias;
  return s;
}

// A square-window pooling shape with equal strides and padding on every side.
inline PoolShape pool_shape(PoolKind kind, int64_t batch, int64_t h, int64_t w, int64_t c, int64_t k, int64_t stride,
                            int64_t pad) {
  PoolShape s;
  s.kind = kind;
  s.batch = batch;
  s.in_h = h;
  s.in_w = w;
  s.channels = c;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = pad;
  return s;
}

// A backend of this kind with default options (cpu: every core this process may use).
inline std::unique_ptr<Backend> backend_of(DeviceKind kind) {
  BackendOptions options;
  options.kind = kind;
  return make_backend(options);
}

// n values uniform in [-1, 1), the same for the same seed.
inline Vec random_vec(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// n values offset + spread * N(0, 1), the same for the same seed.
inline std::vector<float> normal_values(int64_t n, float offset, float spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = offset + spread * d(rng);
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
