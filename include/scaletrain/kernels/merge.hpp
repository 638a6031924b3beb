// Element-wise sums and channel concatenation for graph models: Add's forward, the Model's sum of a
// tensor's gradients arriving along several edges, and Concat's forward (one input into its
// channels of the output) and backward (its channels of the gradient out). NHWC-like layouts: the
// channel is the last dimension. T is the storage type (float, bf16, f16); sums are taken in f32.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/packs.hpp"

namespace scaletrain::kernels {

// out[i] = a[i] + b[i]; out may be a. In packs (kernels/packs.hpp).
template <class T>
struct AddTensors {
  const T* a;
  const T* b;
  T* out;
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float u[N], v[N];
    load_pack<T, N>(a + i, u);
    load_pack<T, N>(b + i, v);
    each_in_pack<N>([&](int k) { u[k] += v[k]; });
    store_pack<T, N>(out + i, u);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return pack_aligned(a) && pack_aligned(b) && pack_aligned(out); }
};

// i over the part's elements, [rows, part_channels]: whole[row, offset + c] and part[row, c].
template <class T>
struct CopyIntoChannels {
  const T* part;
  T* whole;
  int64_t part_channels, whole_channels, offset;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / part_channels, c = i - row * part_channels;
    whole[row * whole_channels + offset + c] = part[i];
  }
};

template <class T>
struct CopyFromChannels {
  const T* whole;
  T* part;
  int64_t part_channels, whole_channels, offset;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t row = i / part_channels, c = i - row * part_channels;
    part[i] = whole[row * whole_channels + offset + c];
  }
};

}  // namespace scaletrain::kernels
