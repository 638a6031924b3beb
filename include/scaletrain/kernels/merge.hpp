// Element-wise sums and channel concatenation for graph models: Add's forward, the Model's sum of a
// tensor's gradients arriving along several edges, and the channel copies of Concat's forward (one
// input into its channels of the output) and backward (its channels of the gradient out). NHWC-like layouts: the
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

// (r, p) over rows x packs of N channels: `channels` values of row r copied from src (rows of
// src_stride values, starting at src_offset) to dst (rows of dst_stride, at dst_offset). Concat's
// forward copies each input into its channels of the output, its backward each input's channels of
// the gradient out. Packs copy as stored (no conversion).
template <class T, int N>
struct CopyChannels {
  const T* src;
  T* dst;
  int64_t src_stride, src_offset, dst_stride, dst_offset;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r, int64_t p) const {
    const T* from = src + r * src_stride + src_offset + p * N;
    T* to = dst + r * dst_stride + dst_offset + p * N;
    if constexpr (N == 1) {
      to[0] = from[0];
    } else {
      *reinterpret_cast<Pack<T, N>*>(to) = *reinterpret_cast<const Pack<T, N>*>(from);
    }
  }
};

}  // namespace scaletrain::kernels
