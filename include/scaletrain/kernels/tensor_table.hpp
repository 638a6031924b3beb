// A device table of tensors laid back to back in a flat buffer, each known by where it ends: the
// search that finds the tensor (or range) holding an element, for launches over many tensors at once
// (the optimizer's ranges, the per-tensor norms, the filters' laid-out copies).
#pragma once
#include <cstdint>

#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

// The first of `n` increasing ends (exclusive) that is past element i: the range or tensor holding it.
SCALETRAIN_HOST_DEVICE inline int64_t first_end_past(const int64_t* ends, int64_t n, int64_t i) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (ends[mid] > i) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace scaletrain::kernels
