// Padding's text forms and the padding arithmetic: TensorFlow's 'same', 'valid', and PyTorch's explicit
// symmetric padding.
#include "scaletrain/nn/padding.hpp"

#include <algorithm>
#include <cctype>

#include "scaletrain/core/error.hpp"

namespace scaletrain::nn {

Padding Padding::symmetric(int64_t p) {
  ST_CHECK(p >= 0, "padding ", p, " is negative (expected same, valid or a number of cells >= 0)");
  return Padding(Kind::symmetric, p);
}

std::string Padding::to_string() const {
  switch (kind_) {
    case Kind::same: return "same";
    case Kind::valid: return "valid";
    case Kind::symmetric: break;
  }
  return std::to_string(amount_);
}

Padding parse_padding(const std::string& name) {
  if (name == "same") return Padding::same;
  if (name == "valid") return Padding::valid;
  const bool digits = !name.empty() && name.size() <= 9 &&
                      std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
  if (digits) return Padding::symmetric(std::stoll(name));
  ST_FAIL("unknown padding '", name, "' (expected same, valid or a number of cells such as 1)");
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
  switch (p.kind()) {
    case Padding::Kind::same:
      same_1d(in_h, k_h, s_h, pad.top, pad.bottom);
      same_1d(in_w, k_w, s_w, pad.left, pad.right);
      break;
    case Padding::Kind::valid: break;
    case Padding::Kind::symmetric: pad.top = pad.left = pad.bottom = pad.right = p.amount(); break;
  }
  return pad;
}

}  // namespace scaletrain::nn
