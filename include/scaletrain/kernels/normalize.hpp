// Input preparation on the compute device: stored samples (uint8, f16 or f32, [..., C]) to
// normalized values in the compute type, and the random crop (with zero padding) and horizontal
// flip augmentation of [H, W, C] images, drawn per sample from (seed, step, global sample index), so
// a sample is augmented alike on any rank count.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/random.hpp"

namespace scaletrain::kernels {

// A stored sample value as float: uint8 exactly, f16 widened, f32 as is.
SCALETRAIN_INLINE float stored_to_float(uint8_t x) { return static_cast<float>(x); }
SCALETRAIN_INLINE float stored_to_float(f16 x) { return f16_to_float(x); }
SCALETRAIN_INLINE float stored_to_float(float x) { return x; }

// i over pixels (elements / channels): y = (x - mean[c]) * inv_std[c] for each channel c of the
// pixel, mean and std in the units of the stored values, y stored as T (the compute precision). Indexing by pixel avoids an integer
// modulo per element, which costs more than the arithmetic.
template <class S, class T>
struct Normalize {
  const S* x;
  T* y;
  const float* mean;
  const float* inv_std;
  int64_t channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t base = i * channels;
    for (int64_t c = 0; c < channels; ++c) y[base + c] = from_float<T>((stored_to_float(x[base + c]) - mean[c]) * inv_std[c]);
  }
};

// One channel (grayscale): i over elements, y = (x - mean) * inv_std with mean and inv_std passed
// by value. Normalize with channels = 1 would run a one-trip inner loop per element that the host
// compiler neither vectorizes nor unswitches; this flat loop vectorizes, which matters where the
// input preparation is a visible share of a small model's step.
template <class S, class T>
struct NormalizeOneChannel {
  const S* x;
  T* y;
  float mean;
  float inv_std;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    y[i] = from_float<T>((stored_to_float(x[i]) - mean) * inv_std);
  }
};

// i over samples: a crop offset in [-pad, pad]^2 (zero fill outside the image) and, when flip is
// true, a horizontal flip with probability 1/2, drawn from uniform01(seed, step, 3*g + {0,1,2})
// with g = sample_index[i], the sample's index in the data set. S is the stored type (the crop and
// flip move values, so they run before normalization, on the stored samples).
template <class S>
struct AugmentCropFlip {
  const S* x;
  S* y;
  int64_t height;
  int64_t width;
  int64_t channels;
  int64_t pad;
  bool flip;
  uint64_t seed;
  const double* step;  // the step number, read on the device (the step state's), so launches repeat
  const int64_t* sample_index;  // [batch]
  SCALETRAIN_HOST_DEVICE void operator()(int64_t s) const {
    const uint64_t step_number = static_cast<uint64_t>(*step);
    const uint64_t base = 3 * static_cast<uint64_t>(sample_index[s]);
    const int64_t span = 2 * pad + 1;
    int64_t dy = static_cast<int64_t>(uniform01(seed, step_number, base) * static_cast<float>(span)) - pad;
    int64_t dx = static_cast<int64_t>(uniform01(seed, step_number, base + 1) * static_cast<float>(span)) - pad;
    if (dy > pad) dy = pad;
    if (dx > pad) dx = pad;
    const bool mirror = flip && uniform01(seed, step_number, base + 2) < 0.5f;
    const int64_t plane = height * width * channels;
    const S* in = x + s * plane;
    S* out = y + s * plane;
    for (int64_t h = 0; h < height; ++h)
      for (int64_t w = 0; w < width; ++w) {
        const int64_t sh = h + dy;
        const int64_t sw0 = w + dx;
        const int64_t sw = mirror ? width - 1 - sw0 : sw0;
        const bool inside = sh >= 0 && sh < height && sw0 >= 0 && sw0 < width;
        for (int64_t c = 0; c < channels; ++c)
          out[(h * width + w) * channels + c] = inside ? in[(sh * width + sw) * channels + c] : S{};
      }
  }
};

}  // namespace scaletrain::kernels
