// Keras/TensorFlow 'same' and 'valid' padding arithmetic.
#include "scaletrain/nn/padding.hpp"

#include <algorithm>

#include "scaletrain/core/error.hpp"

namespace scaletrain::nn {

Padding parse_padding(const std::string& name) {
  if (name == "same") return Padding::same;
  if (name == "valid") return Padding::valid;
  ST_FAIL("unknown padding '", name, "' (expected same or valid)");
}

namespace {
void same_1d(int64_t in, int64_t k, int64_t s, int64_t& lo, int64_t& hi) {
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + k - in, 0);
  lo = total / 2;
  hi = total - lo;
}
}  // namespace

Pad2D compute_padding(Padding p, int64_t in_h, int64_t in_w, int64_t k_h, int64_t k_w, int64_t s_h, int64_t s_w) {
  Pad2D pad;
  if (p == Padding::same) {
    same_1d(in_h, k_h, s_h, pad.top, pad.bottom);
    same_1d(in_w, k_w, s_w, pad.left, pad.right);
  }
  return pad;
}

}  // namespace scaletrain::nn
