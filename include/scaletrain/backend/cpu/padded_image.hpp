// PaddedImage: one NHWC input image of a convolution copied into a zero-bordered buffer (and cropped
// back), the layout the CPU backend's direct loops (conv_few_taps, conv_narrow_rows, depthwise_direct)
// read their windows from, so that no loop tests for the border.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

class PaddedImage {
 public:
  // s's input with s's padding; row_slack floats after each padded row and tail_slack after the last
  // (room for vector loads that run past a row's or the image's end).
  explicit PaddedImage(const ConvShape& s, int64_t row_slack = 0, int64_t tail_slack = 0)
      : in_h_(s.in_h),
        row_in_(s.in_w * s.in_c),
        row_floats_((s.in_w + s.pad_left + s.pad_right) * s.in_c + row_slack),
        first_(s.pad_top * row_floats_ + s.pad_left * s.in_c),
        floats_((s.in_h + s.pad_top + s.pad_bottom) * row_floats_ + tail_slack) {}

  int64_t row_floats() const { return row_floats_; }  // one padded row, slack included
  int64_t floats() const { return floats_; }          // the whole buffer
  int64_t image_floats() const { return in_h_ * row_in_; }  // one unpadded image

  // buffer = x's rows inside a border of zeros (the slack zeroed too), each float written once.
  void pad(const float* x, float* buffer) const {
    float* next = buffer;  // the first float not yet written
    for (int64_t h = 0; h < in_h_; ++h) {
      float* r = row(buffer, h);
      std::fill(next, r, 0.0f);
      next = std::copy(x + h * row_in_, x + (h + 1) * row_in_, r);
    }
    std::fill(next, buffer + floats_, 0.0f);
  }
  // The offset in the buffer of each output pixel's window (its top-left tap) for convolution s, in
  // output order.
  std::vector<int64_t> window_offsets(const ConvShape& s) const {
    std::vector<int64_t> offsets(s.out_h() * s.out_w());
    for (int64_t q = 0; q < static_cast<int64_t>(offsets.size()); ++q)
      offsets[q] = (q / s.out_w()) * s.stride_h * row_floats_ + (q % s.out_w()) * s.stride_w * s.in_c;
    return offsets;
  }
  // x = the part of buffer inside the border.
  void crop(const float* buffer, float* x) const {
    for (int64_t h = 0; h < in_h_; ++h) std::copy(row(buffer, h), row(buffer, h) + row_in_, x + h * row_in_);
  }

 private:
  template <class T>
  T* row(T* buffer, int64_t h) const {
    return buffer + first_ + h * row_floats_;
  }

  int64_t in_h_, row_in_, row_floats_, first_, floats_;
};

// A window's taps in NHWC order (kh, kw, ic), so that a kernel row's taps are contiguous in the
// buffer: the tap of OIHW weight column j = (ic, kh, kw) of convolution s.
inline int64_t nhwc_tap_of_oihw(const ConvShape& s, int64_t j) {
  const int64_t kk = s.kernel_h * s.kernel_w;
  return (j % kk) * s.in_c + j / kk;
}

}  // namespace scaletrain::cpu
