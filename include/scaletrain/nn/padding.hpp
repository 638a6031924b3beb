// How a convolution or pooling layer pads its input: Keras's 'same' and 'valid', or PyTorch's explicit
// padding of p cells on all four sides (nn.Conv2d(padding=p), nn.MaxPool2d(padding=p)) or of ph rows
// above and below and pw columns left and right (nn.Conv2d(padding=(ph, pw))), and the
// top/left/bottom/right padding each gives for an input, kernel and stride.
#pragma once
#include <cstdint>
#include <string>

namespace scaletrain::nn {

// A value: Padding::same, Padding::valid or Padding::symmetric(p). Compare with ==.
class Padding {
 public:
  enum class Kind { same, valid, symmetric };

  static const Padding same;   // TensorFlow's: ceil(in / stride) outputs, any odd cell of padding at the end
  static const Padding valid;  // none: windows inside the input
  // p >= 0 cells on every side; floor((in + 2p - k) / stride) + 1 outputs, as PyTorch without
  // ceil_mode. An error for a negative p.
  static Padding symmetric(int64_t p);
  // ph rows on top and bottom, pw columns on the left and right (PyTorch's padding=(ph, pw)).
  static Padding symmetric(int64_t ph, int64_t pw);

  constexpr Padding() : Padding(Kind::same, 0, 0) {}  // as Conv2DOptions's default
  Kind kind() const { return kind_; }
  int64_t rows() const { return rows_; }        // ph of symmetric; 0 for same and valid
  int64_t columns() const { return columns_; }  // pw of symmetric; 0 for same and valid
  // "same", "valid", p, or "ph,pw" where they differ (parse_padding's forms).
  std::string to_string() const;
  friend bool operator==(const Padding&, const Padding&) = default;

 private:
  constexpr Padding(Kind kind, int64_t rows, int64_t columns) : kind_(kind), rows_(rows), columns_(columns) {}
  Kind kind_;
  int64_t rows_, columns_;
};

inline constexpr Padding Padding::same{Padding::Kind::same, 0, 0};
inline constexpr Padding Padding::valid{Padding::Kind::valid, 0, 0};

// "same", "valid", a non-negative integer ("1": Padding::symmetric(1)) or two ("0,3":
// Padding::symmetric(0, 3)).
Padding parse_padding(const std::string& name);

// The cells of padding on each side. bottom and right are the padding placed after the input; the
// output size is floor((in + top + bottom - k) / stride) + 1 (ConvShape::out_h, PoolShape::out_h), so
// with a stride that does not divide in + top + bottom - k the last rows or columns of the padded
// input (padding, or input cells too) fall in no window. 'same' and 'valid' leave none unused.
struct Pad2D {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
};

// TensorFlow's rule for 'same': ceil(in / stride) outputs with the extra padding at the end.
Pad2D compute_padding(Padding p, int64_t in_h, int64_t in_w, int64_t k_h, int64_t k_w, int64_t s_h, int64_t s_w);

}  // namespace scaletrain::nn
