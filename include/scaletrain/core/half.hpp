// bf16 and f16 storage types with round-to-nearest-even conversions, usable on host and device,
// and to_float / from_float<T> for functors templated over the storage type.
// Kokkos 3.4 in Debian has no bhalf_t and its half_t is a float, so these are scaletrain's own.
#pragma once
#include <cstdint>
#include <cstring>

#include "scaletrain/core/macros.hpp"

namespace scaletrain {

SCALETRAIN_INLINE uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

SCALETRAIN_INLINE float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// bfloat16: the top 16 bits of an IEEE float32.
struct bf16 {
  uint16_t bits = 0;
};

SCALETRAIN_INLINE bf16 float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  bf16 r;
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {  // NaN stays a quiet NaN
    r.bits = static_cast<uint16_t>((u >> 16) | 0x0040u);
    return r;
  }
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  r.bits = static_cast<uint16_t>(u >> 16);
  return r;
}

SCALETRAIN_INLINE float bf16_to_float(bf16 h) { return bits_float(static_cast<uint32_t>(h.bits) << 16); }

// IEEE binary16.
struct f16 {
  uint16_t bits = 0;
};

SCALETRAIN_INLINE f16 float_to_f16(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  f16 r;
  if (mag >= 0x7f800000u) {  // inf or NaN
    r.bits = static_cast<uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x0200u : 0u));
    return r;
  }
  if (mag >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    r.bits = static_cast<uint16_t>(sign | 0x7c00u);
    return r;
  }
  if (mag < 0x38800000u) {  // subnormal or zero in f16
    if (mag < 0x33000000u) {  // below half the smallest subnormal: +-0
      r.bits = static_cast<uint16_t>(sign);
      return r;
    }
    uint32_t e = mag >> 23;
    uint32_t m = (mag & 0x007fffffu) | 0x00800000u;
    uint32_t shift = 126u - e;  // 14 - (e - 127) + 10 - 23 + ... => bits to drop
    uint32_t drop = shift;
    uint32_t v = m >> drop;
    uint32_t rem = m & ((1u << drop) - 1u);
    uint32_t half = 1u << (drop - 1u);
    if (rem > half || (rem == half && (v & 1u))) ++v;
    r.bits = static_cast<uint16_t>(sign | v);
    return r;
  }
  uint32_t v = mag - 0x38000000u;  // rebias exponent 127 -> 15
  uint32_t rem = v & 0x1fffu;
  v >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
  r.bits = static_cast<uint16_t>(sign | v);
  return r;
}

SCALETRAIN_INLINE float f16_to_float(f16 h) {
  uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  uint32_t e = (h.bits >> 10) & 0x1fu;
  uint32_t m = h.bits & 0x3ffu;
  if (e == 0) {
    if (m == 0) return bits_float(sign);
    // subnormal: m * 2^-24
    float f = static_cast<float>(m) * 5.9604644775390625e-08f;
    return sign ? -f : f;
  }
  if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// Storage-generic loads and stores for the kernels/ functors: compute in float, store as T.
SCALETRAIN_INLINE float to_float(float x) { return x; }
SCALETRAIN_INLINE float to_float(bf16 x) { return bf16_to_float(x); }
SCALETRAIN_INLINE float to_float(f16 x) { return f16_to_float(x); }

template <class T>
struct FromFloat;
template <>
struct FromFloat<float> {
  SCALETRAIN_INLINE static float convert(float f) { return f; }
};
template <>
struct FromFloat<bf16> {
  SCALETRAIN_INLINE static bf16 convert(float f) { return float_to_bf16(f); }
};
template <>
struct FromFloat<f16> {
  SCALETRAIN_INLINE static f16 convert(float f) { return float_to_f16(f); }
};
template <class T>
SCALETRAIN_INLINE T from_float(float f) {
  return FromFloat<T>::convert(f);
}

}  // namespace scaletrain
