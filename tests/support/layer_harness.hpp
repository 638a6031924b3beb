// Test support: runs one layer alone (wrapped in a one-layer Model so its parameters are bound to
// flat buffers exactly as in training) on the CPU backend, and compares tensors with tolerances.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/nn/model.hpp"

namespace scaletrain::testing {

struct LayerHarness {
  std::unique_ptr<Backend> backend = make_cpu_backend();
  nn::Model model{"harness"};
  int64_t batch = 0;

  LayerHarness(nn::LayerPtr layer, const Shape& in_sample, int64_t batch_size) : batch(batch_size) {
    model.add(std::move(layer));
    model.configure(in_sample);
    model.build(*backend, batch);
  }
  nn::Layer& layer() { return *model.layers()[0]; }
  nn::Parameter& param(const std::string& name) {
    for (auto& p : layer().parameters())
      if (p.name == name) return p;
    ADD_FAILURE() << "layer has no parameter " << name;
    return layer().parameters().at(0);
  }
};

// Max |a - b| / (atol + rtol * |b|) over all elements must stay <= 1.
inline ::testing::AssertionResult tensors_close(const float* a, const float* b, int64_t n, double rtol, double atol) {
  double worst = 0;
  int64_t where = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(static_cast<double>(a[i]) - b[i]) / (atol + rtol * std::fabs(static_cast<double>(b[i])));
    if (!(err <= worst)) {
      worst = err;
      where = i;
    }
  }
  if (worst <= 1.0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "element " << where << ": got " << a[where] << ", expected " << b[where]
                                       << " (error " << worst << "x the tolerance)";
}

}  // namespace scaletrain::testing
