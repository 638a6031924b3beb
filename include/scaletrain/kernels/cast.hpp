// Precision casts between storage types (float, bf16, f16), i over elements: y = x / divisor,
// computed in float and rounded to nearest even. The divisor folds the gradient mean (or the
// pre-division of an fp16 all-reduce) into the cast; 1 leaves the value as it is.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/packs.hpp"

namespace scaletrain::kernels {

// In packs (kernels/packs.hpp).
template <class From, class To>
struct Cast {
  const From* x;
  To* y;
  float divisor = 1.0f;
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float v[N];
    load_pack<From, N>(x + i, v);
    each_in_pack<N>([&](int k) { v[k] /= divisor; });
    store_pack<To, N>(y + i, v);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return pack_aligned(x) && pack_aligned(y); }
};

}  // namespace scaletrain::kernels
