// DepthwiseDirect: the direct f32 depthwise convolution (groups == channels), NHWC, any kernel, stride
// and padding, one image at a time, vectorized across channels in 16-float blocks. An image is copied
// into a zero-padded buffer (the caller's, one per thread) that stays in cache. 3x3 kernels at stride 1
// (SeparableConv2D's) run row-blocked loops that keep each input vector in a register for all the
// taps that read it; backward-data is then the forward loop on the padded dy with the kernel rotated
// (for 'same' padding on dy itself, its missing border read as zeros). Used image by image by the
// fused separable convolution (separable_conv_fused.cpp) and, over a batch, by the standalone
// depthwise op (depthwise_conv_direct.cpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "scaletrain/backend/cpu/padded_image.hpp"
#include "scaletrain/backend/cpu/vec16.hpp"
#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

class DepthwiseDirect {
 public:
  // s: a depthwise f32 shape (groups == in_c == out_c); its batch is not used.
  explicit DepthwiseDirect(const ConvShape& s);

  // OIHW weights [C, 1, KH, KW] and the bias (null: none) for the calls that follow.
  void set_weights(const float* w, const float* b);
  // Floats of the padded buffer each call needs.
  int64_t padded_floats() const { return std::max(image_.floats(), dy_image_.floats()); }
  // Floats of one image's input and output.
  int64_t in_floats() const { return image_.image_floats(); }
  int64_t out_floats() const { return out_h_ * out_w_ * c_; }

  void forward(const float* x, float* y, float* padded) const;
  // forward and backward_weights in two steps, so that one padded image serves both.
  void pad_input(const float* x, float* padded) const { image_.pad(x, padded); }
  void forward_padded(const float* padded, float* y) const;
  // dx = the sum of dy * w over the windows that read each input (overwritten).
  void backward_data(const float* dy, float* dx, float* padded) const;

  // Weight and bias gradient sums in [taps, blocks] vectors, added to by backward_weights and turned
  // into OIHW dw and db (null: none) by write_out.
  struct Gradients {
    std::vector<Vec16> dw, db;
    void clear();
    void add(const Gradients& other);
  };
  Gradients make_gradients() const;
  void backward_weights(const float* x, const float* dy, Gradients& g, float* padded) const;
  void backward_weights_padded(const float* padded, const float* dy, Gradients& g) const;
  void write_out(const Gradients& g, float* dw, float* db) const;

 private:
  // Whether a block's first and last input columns are outside an unpadded image (read as zero).
  struct Edges {
    bool zero_first = false, zero_last = false;
  };
  // The input rows of the 3x3 loops: a padded buffer, or an unpadded image of a 'same' convolution
  // whose missing rows are zero_row and whose columns -1 and width are masked.
  struct Rows3x3Input {
    const float* image;
    int64_t row_floats;
    int64_t height;          // unpadded: the image's rows
    const float* zero_row;   // unpadded: a row of zeros
    int64_t pixel_floats;    // unpadded: the step back to column -1
    bool unpadded;
    // Kernel row kh of output row oh, at output column 0's window.
    const float* row(int64_t oh, int kh) const {
      if (!unpadded) return image + (oh + kh) * row_floats;
      const int64_t r = oh - 1 + kh;
      return (r < 0 || r >= height ? zero_row : image + r * row_floats) - pixel_floats;
    }
    Edges edges(int64_t ow, int64_t pixels, int64_t cols) const {
      return {unpadded && ow == 0, unpadded && ow + pixels == cols};
    }
  };
  Rows3x3Input padded_rows(const float* padded, const PaddedImage& image) const;
  Rows3x3Input unpadded_rows(const float* image) const;
  template <int kP, bool kEdges>
  void rows3x3_block(const float* const* src, int64_t at, Edges e, const Vec16* w, Vec16 bias, float* dst,
                     int64_t lanes, bool stream_out) const;
  template <int kP, bool kEdges>
  void rows3x3_blocks(const float* const* r, int64_t offset, Edges e, const Vec16* w, bool bias, float* dst,
                      bool stream_out) const;
  void rows3x3(const Rows3x3Input& in, int64_t rows, int64_t cols, const Vec16* w, bool bias, float* out,
               bool stream_out) const;
  template <bool kEdges>
  void rows3x3_rows(const Rows3x3Input& in, int64_t rows, int64_t cols, const Vec16* w, bool bias, float* out,
                    bool stream_out) const;
  void backward_weights_3x3(const float* padded, const float* dy, Gradients& g) const;
  template <int kB>
  void forward_blocks(const float* xw, int64_t c0, float* yq) const;
  template <int kB>
  void backward_data_blocks(const float* dyq, int64_t c0, float* dxw) const;
  template <int kB>
  void backward_weights_blocks(const float* xw, const float* dyq, int64_t c0, Gradients& g) const;
  // Offset in the padded image of output pixel (oh, ow)'s window, and of tap (kh, kw) within it.
  int64_t window(int64_t oh, int64_t ow) const {
    return oh * s_.stride_h * image_.row_floats() + ow * s_.stride_w * c_;
  }
  int64_t tap_offset(int64_t kh, int64_t kw) const { return kh * image_.row_floats() + kw * c_; }

  ConvShape s_;
  bool rows3x3_ = false;  // 3x3, stride 1, padding at most 2 per side: the row-blocked loops
  bool same3x3_ = false;  // and 'same' padding of whole blocks: backward-data reads dy unpadded
  PaddedImage image_;     // a tail block's full-vector loads may run 15 floats past the last pixel
  PaddedImage dy_image_;  // rows3x3_: dy padded by 2 - padding per side
  int64_t c_ = 0, blocks_ = 0, taps_ = 0;
  int64_t out_h_ = 0, out_w_ = 0;
  std::vector<Vec16> wt_;    // [taps, blocks], zero beyond C
  std::vector<Vec16> wt_rotated_;  // rows3x3_: the same with the kernel rotated by 180 degrees
  std::vector<Vec16> bias_;  // [blocks]
  std::vector<float> zero_row_;  // same3x3_: one zero row and a pixel on each side
};

}  // namespace scaletrain::cpu
