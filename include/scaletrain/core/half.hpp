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

// Branch-free (selects only), so that loops over f16 data vectorize on the host; the method is the
// classic "magic number" one: subnormals are rounded by a float addition that lines the f16
// subnormal step up with the f32 ulp, normals by adding 0xfff plus the lowest kept bit (ties to even).
SCALETRAIN_INLINE f16 float_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t mag = x & 0x7fffffffu;
  // |f| >= 65536 (or inf, NaN): inf, or a quiet NaN. Values in [65520, 65536) reach inf below.
  const uint32_t special = mag > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // |f| < 2^-14: f16 subnormal or zero. Adding 0.5 puts the f16 subnormal step (2^-24) at the f32
  // ulp of 0.5, so the float addition rounds to nearest even; the low bits are then the result.
  const float magic = bits_float(126u << 23);
  const uint32_t subnormal = float_bits(bits_float(mag) + magic) - (126u << 23);
  // normal: rebias the exponent 127 -> 15 and round the 13 dropped bits to nearest even.
  const uint32_t normal = (mag - 0x38000000u + 0xfffu + ((mag >> 13) & 1u)) >> 13;
  const uint32_t v = mag >= 0x47800000u ? special : (mag < 0x38800000u ? subnormal : normal);
  f16 r;
  r.bits = static_cast<uint16_t>(sign | v);
  return r;
}

// Branch-free as float_to_f16: subnormals are scaled by a float subtraction.
SCALETRAIN_INLINE float f16_to_float(f16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t shifted = static_cast<uint32_t>(h.bits & 0x7fffu) << 13;  // exponent and mantissa
  const uint32_t exponent = shifted & 0x0f800000u;
  const uint32_t normal = shifted + (112u << 23);                 // rebias 15 -> 127
  const uint32_t inf_nan = shifted + (224u << 23);                // exponent 31 -> 255
  const uint32_t subnormal = float_bits(bits_float(shifted + (113u << 23)) - bits_float(113u << 23));
  const uint32_t v = exponent == 0x0f800000u ? inf_nan : (exponent == 0 ? subnormal : normal);
  return bits_float(sign | v);
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
