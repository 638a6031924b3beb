// Counter-based random numbers for kernels: a pure function of (seed, stream, index), so host and
// device, any thread count and any rank draw the same values with no generator state.
#pragma once
#include <cstdint>

#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

// splitmix64's finalizer: a bijective 64-bit mix.
SCALETRAIN_INLINE uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 24 random bits.
SCALETRAIN_INLINE float uniform01(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t h = mix64(mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ULL)) + index);
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

}  // namespace scaletrain::kernels
