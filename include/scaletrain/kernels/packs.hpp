// Packs of N consecutive values of a storage type T, loaded and stored as one aligned access: 8 bf16
// or f16 values are one 128-bit load on a device, 8 floats two. The element passes over channels-last
// data take a pack of channels per index where the channels and every pointer allow it
// (pack_fits), one channel otherwise. The contiguous element-wise functors (activations, sums,
// casts, scaling, optimizer updates) take a pack of elements per index the same way: each has
// pack<N>(first) over elements [first, first + N), operator()(i) = pack<1>(i), and packs_fit() saying
// whether its pointers are aligned for packs; ElementPacks<F, N> runs pack<N> at index i * N.
#pragma once
#include <cstdint>
#include <initializer_list>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

constexpr int kChannelPack = 8;

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// One value (N = 1) is a plain access, which the host compiler vectorizes along a row's loop.
template <class T, int N>
SCALETRAIN_INLINE void load_pack(const T* p, float* out) {
  if constexpr (N == 1) {
    out[0] = to_float(p[0]);
  } else {
    const Pack<T, N> k = *reinterpret_cast<const Pack<T, N>*>(p);
    SCALETRAIN_UNROLL
    for (int i = 0; i < N; ++i) out[i] = to_float(k.v[i]);
  }
}

template <class T, int N>
SCALETRAIN_INLINE void store_pack(T* p, const float* in) {
  if constexpr (N == 1) {
    p[0] = from_float<T>(in[0]);
  } else {
    Pack<T, N> k;
    SCALETRAIN_UNROLL
    for (int i = 0; i < N; ++i) k.v[i] = from_float<T>(in[i]);
    *reinterpret_cast<Pack<T, N>*>(p) = k;
  }
}

// f(k) for each value k of a pack: a plain call for one value (no loop left for the host compiler to
// remove before it vectorizes the row's loop around it), unrolled for more.
template <int N, class F>
SCALETRAIN_INLINE void each_in_pack(const F& f) {
  if constexpr (N == 1) {
    f(0);
  } else {
    SCALETRAIN_UNROLL
    for (int k = 0; k < N; ++k) f(k);
  }
}

// Whether rows of `channels` values of T at these addresses split into aligned packs of kChannelPack.
template <class T>
bool pack_fits(int64_t channels, std::initializer_list<const void*> pointers) {
  if (channels % kChannelPack != 0) return false;
  for (const void* p : pointers)
    if (p && reinterpret_cast<uintptr_t>(p) % (sizeof(T) * kChannelPack) != 0) return false;
  return true;
}

// Whether p is aligned for a pack of kChannelPack values of T (null is: no array to read).
template <class T>
bool pack_aligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * kChannelPack) == 0;
}

// Whether n elements of the element-wise functor f run in packs: n a multiple of kChannelPack and
// f's pointers aligned (f.packs_fit()).
template <class F>
bool element_packs_fit(int64_t n, const F& f) {
  return n % kChannelPack == 0 && f.packs_fit();
}

// An element-wise functor F over packs of N elements: index i is elements [i * N, i * N + N).
template <class F, int N>
struct ElementPacks {
  F f;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { f.template pack<N>(i * N); }
};

}  // namespace scaletrain::kernels
