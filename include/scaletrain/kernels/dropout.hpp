// Inverted dropout: keep with probability 1 - rate and scale by 1 / (1 - rate); the mask comes
// from the counter-based generator keyed on (seed, step, global sample index, element within the
// sample), so a sample gets the same mask whichever rank and batch row it lands in: N ranks train
// the same model as one rank. T is the storage type (float, bf16, f16).
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/random.hpp"

namespace scaletrain::kernels {

// i over elements; row i / per_sample holds the sample sample_index[row] of the data set.
template <class T>
struct DropoutForward {
  const T* x;
  T* y;
  uint8_t* mask;
  float rate;
  uint64_t seed;       // the run's seed mixed with the layer's position
  const double* step;  // the step number, read on the device (the step state's), so launches repeat
  const int64_t* sample_index;  // [batch]
  int64_t per_sample;           // elements per sample
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / per_sample;
    const uint64_t key = static_cast<uint64_t>(sample_index[row]) * static_cast<uint64_t>(per_sample) +
                         static_cast<uint64_t>(i - row * per_sample);
    const bool keep = uniform01(seed, static_cast<uint64_t>(*step), key) >= rate;
    mask[i] = keep ? 1 : 0;
    y[i] = from_float<T>(keep ? to_float(x[i]) / (1.0f - rate) : 0.0f);
  }
};

template <class T>
struct DropoutBackward {
  const T* dy;
  const uint8_t* mask;
  T* dx;
  float scale;  // 1 / (1 - rate)
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { dx[i] = from_float<T>(mask[i] ? to_float(dy[i]) * scale : 0.0f); }
};

}  // namespace scaletrain::kernels
