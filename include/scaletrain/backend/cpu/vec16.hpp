// Vec16: 16 floats as a GCC/Clang vector (one AVX-512 register, two AVX2 ones), and its loads and
// stores, full or of the first n lanes, for the CPU backend's direct kernels (the few-taps,
// narrow-rows and depthwise convolutions, max pooling).
#pragma once
#include <cstdint>
#include <cstring>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

namespace scaletrain::cpu {

inline constexpr int kLanes = 16;
using Vec16 = float __attribute__((vector_size(kLanes * sizeof(float))));

inline Vec16 load(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, Vec16 v) { std::memcpy(p, &v, sizeof v); }
#ifdef __AVX512F__
// The AVX-512 mask of the first n < 16 lanes.
inline __mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }
#endif

// The first n lanes (all 16 when n >= 16); the others are zero or left alone. With AVX-512 a masked
// load or store (no lane past n is touched); without, a loop over the lanes.
inline Vec16 load_part(const float* p, int64_t n) {
  if (n >= kLanes) return load(p);
#ifdef __AVX512F__
  return reinterpret_cast<Vec16>(_mm512_maskz_loadu_ps(first_lanes(n), p));
#else
  Vec16 v{};
  for (int64_t i = 0; i < n; ++i) v[i] = p[i];
  return v;
#endif
}
inline void store_part(float* p, Vec16 v, int64_t n) {
  if (n >= kLanes) return store(p, v);
#ifdef __AVX512F__
  _mm512_mask_storeu_ps(p, first_lanes(n), reinterpret_cast<__m512>(v));
#else
  for (int64_t i = 0; i < n; ++i) p[i] = v[i];
#endif
}

// Keeps v in a register from here on: the compiler otherwise folds a loaded vector into each FMA
// that uses it as a memory operand, a load per FMA instead of one per vector.
inline void keep_in_register(Vec16& v) {
#ifdef __AVX512F__
  asm("" : "+v"(v));
#else
  (void)v;
#endif
}
// A non-temporal store, for output that goes to memory and is not read again soon (a layer's output
// of megabytes): with AVX-512 and p 64-byte aligned it skips reading the line it fills; otherwise a
// plain store. stream_fence() orders the streamed stores before what follows.
inline void stream(float* p, Vec16 v) {
#ifdef __AVX512F__
  if ((reinterpret_cast<uintptr_t>(p) & 63) == 0) return _mm512_stream_ps(p, reinterpret_cast<__m512>(v));
#endif
  store(p, v);
}
inline void stream_fence() {
#ifdef __AVX512F__
  _mm_sfence();
#endif
}

}  // namespace scaletrain::cpu
