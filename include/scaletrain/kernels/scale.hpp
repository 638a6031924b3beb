// Scaling and finiteness checks: x *= factor (loss-scale unscaling), x /= N (gradient averaging), and
// the count of inf/NaN values (the dynamic loss scaler's overflow check) on the per-segment sums.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/packs.hpp"

namespace scaletrain::kernels {

// Both in packs (kernels/packs.hpp).
struct Scale {
  float* x;
  float factor;
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float v[N];
    load_pack<float, N>(x + i, v);
    each_in_pack<N>([&](int k) { v[k] *= factor; });
    store_pack<float, N>(x + i, v);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return pack_aligned(x); }
};

// x /= divisor: the mean of all-reduced gradients (a division, as torch DDP does, not a multiply by
// a rounded 1/N).
struct DivideBy {
  float* x;
  float divisor;
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float v[N];
    load_pack<float, N>(x + i, v);
    each_in_pack<N>([&](int k) { v[k] /= divisor; });
    store_pack<float, N>(x + i, v);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return pack_aligned(x); }
};

// The per-segment sums' source (kernels/segment_sums.hpp) for the count of inf/NaN values of two
// flat tensors at once: segments [0, gradient_segments) the gradients' tensors, elements
// [0, n_gradients); the last segment, elements [n_gradients, n_gradients + n_losses), the losses.
struct NonFiniteFlags {
  static constexpr int kWidth = 1;
  const float* gradients;
  int64_t n_gradients;
  int64_t gradient_segments;
  const float* losses;
  SCALETRAIN_HOST_DEVICE static float nonfinite(float v) {
    return (float_bits(v) & 0x7f800000u) == 0x7f800000u ? 1.0f : 0.0f;
  }
  SCALETRAIN_HOST_DEVICE void load(int64_t i, int64_t segment, float* v) const {
    v[0] = nonfinite(segment < gradient_segments ? gradients[i] : losses[i - n_gradients]);
  }
};

}  // namespace scaletrain::kernels
