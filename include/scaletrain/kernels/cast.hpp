// Precision casts between storage types (float, bf16, f16), i over elements: y = x / divisor,
// computed in float and rounded to nearest even. The divisor folds the gradient mean (or the
// pre-division of an fp16 all-reduce) into the cast; 1 leaves the value as it is.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"

namespace scaletrain::kernels {

template <class From, class To>
struct Cast {
  const From* x;
  To* y;
  float divisor = 1.0f;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { y[i] = from_float<To>(to_float(x[i]) / divisor); }
};

}  // namespace scaletrain::kernels
