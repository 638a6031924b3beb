// Synthetic data sets: N samples of any shape and dtype with a learnable structure (a random
// template per class plus noise), for I/O and scaling experiments at sizes no real data set here
// has, and for runs without a data set. Deterministic from the seed.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "scaletrain/core/tensor.hpp"

namespace scaletrain::data {

struct SyntheticOptions {
  Shape sample_shape{28, 28, 1};
  DType dtype = DType::u8;
  int64_t classes = 10;
  int64_t train_samples = 8192;
  int64_t test_samples = 1024;
  uint64_t seed = 42;
  float noise = 0.35f;  // noise amplitude relative to the template's range
  int gzip_level = 0;
  // Called with (samples written, total) as packing proceeds.
  std::function<void(int64_t, int64_t)> progress;
};

// Writes the data set to `path` (via <path>.tmp and a rename).
void write_synthetic_dataset(const std::string& path, const SyntheticOptions& options);

}  // namespace scaletrain::data
