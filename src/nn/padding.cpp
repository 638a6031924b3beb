// Padding's text forms and the padding arithmetic: TensorFlow's 'same', 'valid', and PyTorch's explicit
// symmetric padding (one amount, or one for the rows and one for the columns).
#include "scaletrain/nn/padding.hpp"

#include <algorithm>
#include <cctype>

#include "scaletrain/core/error.hpp"

namespace scaletrain::nn {

Padding Padding::symmetric(int64_t p) { return symmetric(p, p); }

Padding Padding::symmetric(int64_t ph, int64_t pw) {
  ST_CHECK(ph >= 0 && pw >= 0, "padding ", ph, ",", pw, " is negative (expected same, valid or numbers of cells >= 0)");
  return Padding(Kind::symmetric, ph, pw);
}

std::string Padding::to_string() const {
  switch (kind_) {
    case Kind::same: return "same";
    case Kind::valid: return "valid";
    case Kind::symmetric: break;
  }
  if (rows_ == columns_) return std::to_string(rows_);
  return std::to_string(rows_) + "," + std::to_string(columns_);
}

namespace {
bool is_cell_count(const std::string& s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}
}  // namespace

Padding parse_padding(const std::string& name) {
  if (name == "same") return Padding::same;
  if (name == "valid") return Padding::valid;
  if (is_cell_count(name)) return Padding::symmetric(std::stoll(name));
  const size_t comma = name.find(',');
  if (comma != std::string::npos) {
    const std::string rows = name.substr(0, comma), columns = name.substr(comma + 1);
    if (is_cell_count(rows) && is_cell_count(columns)) return Padding::symmetric(std::stoll(rows), std::stoll(columns));
  }
  ST_FAIL("unknown padding '", name,
          "' (expected same, valid, a number of cells such as 1, or rows,columns such as 0,3)");
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
    case Padding::Kind::symmetric:
      pad.top = pad.bottom = p.rows();
      pad.left = pad.right = p.columns();
      break;
  }
  return pad;
}

}  // namespace scaletrain::nn
