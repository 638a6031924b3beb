// RandomKeys: what a layer's random draws (dropout) are keyed on, so that a sample draws alike on any
// rank count and every step repeats the same launches: the run's seed mixed with the layer's
// position, the step number read on the device (the trainer's step state, f64) and each batch row's
// index in the data set (a device i64 [batch] tensor). A layer run alone, without them, draws at
// step 0 with row r as sample r.
#pragma once
#include <cstdint>
#include <string>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::nn {

class RandomKeys {
 public:
  // The defaults on the device: step 0 and the row numbers 0..batch-1 (queued on `stream`).
  void build(Backend& backend, Stream& stream, int64_t batch, const std::string& layer);
  // `step`: a device f64 the kernels read (null: step 0); `sample_index` undefined: the row numbers.
  void set(uint64_t seed, const double* step, const Tensor& sample_index);

  uint64_t seed() const { return seed_; }
  const double* step() const { return step_; }
  const Tensor& sample_index() const { return sample_index_; }

 private:
  uint64_t seed_ = 0;
  const double* step_ = nullptr;
  Tensor sample_index_;
  Tensor step_zero_, row_index_;  // the defaults
};

}  // namespace scaletrain::nn
