// Precision casts between float32 and bf16 / f16 storage (i over elements).
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"

namespace scaletrain::kernels {

struct CastF32ToBf16 {
  const float* x;
  bf16* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { y[i] = float_to_bf16(x[i]); }
};
struct CastBf16ToF32 {
  const bf16* x;
  float* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { y[i] = bf16_to_float(x[i]); }
};
struct CastF32ToF16 {
  const float* x;
  f16* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { y[i] = float_to_f16(x[i]); }
};
struct CastF16ToF32 {
  const f16* x;
  float* y;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { y[i] = f16_to_float(x[i]); }
};

}  // namespace scaletrain::kernels
