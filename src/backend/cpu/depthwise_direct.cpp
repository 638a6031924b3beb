// The direct depthwise convolution's per-image kernels (depthwise_direct.hpp): row-blocked loops for
// 3x3 at stride 1, and for other shapes a pixel at a time with channel blocks in groups of eight
// (eight accumulator chains in flight), the rest one by one. A tail block's
// full-vector loads may read up to 15 floats past a pixel's channels (into the next pixel, or the
// buffer's slack), whose lanes meet zero weights or a zero gradient and are never stored.
#include "scaletrain/backend/cpu/depthwise_direct.hpp"

#include <algorithm>

#include "scaletrain/core/error.hpp"

namespace scaletrain::cpu {
namespace {
constexpr int kGroup = 8;
constexpr int kRowBlock = 8;  // output pixels per register block of the 3x3 loops

bool takes_rows3x3(const ConvShape& s) {
  return s.kernel_h == 3 && s.kernel_w == 3 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top <= 2 &&
         s.pad_bottom <= 2 && s.pad_left <= 2 && s.pad_right <= 2;
}

// 'Same' 3x3 (padding 1 on every side) of whole channel blocks: backward-data reads dy unpadded, as
// its border is one zero row or column (and no vector load runs past a pixel). The forward still
// copies x into a padded buffer first: x comes from memory, and the copy streams it, which is faster
// than reading x in place with its border handled per pixel; and the fused separable op keeps the
// padded images for the depthwise weight gradient.
bool takes_same3x3(const ConvShape& s) {
  return takes_rows3x3(s) && s.pad_top == 1 && s.pad_bottom == 1 && s.pad_left == 1 && s.pad_right == 1 &&
         s.in_c % kLanes == 0;
}

// The image backward-data reads for 3x3 at stride 1: dy padded so that a forward pass over it with
// the rotated kernel gives dx (unused, and clamped, for other shapes).
ConvShape padded_dy_shape(const ConvShape& s) {
  ConvShape d = s;
  d.in_h = s.out_h();
  d.in_w = s.out_w();
  d.pad_top = std::max<int64_t>(0, 2 - s.pad_top);
  d.pad_bottom = std::max<int64_t>(0, 2 - s.pad_bottom);
  d.pad_left = std::max<int64_t>(0, 2 - s.pad_left);
  d.pad_right = std::max<int64_t>(0, 2 - s.pad_right);
  return d;
}
// The slack after each padded row. At a multiple of 64 channels (256 bytes) a channel block's lines
// of neighbouring pixels fall into a few of L1's 64 sets (at 512 channels, two), and with rows a
// multiple of 4 KB apart every row's into the same ones: the 3x3 loops' three rows of inputs then
// evict each other. A 16-float slack moves each row to other sets.
int64_t padded_row_slack(const ConvShape& s, bool rows3x3) {
  return rows3x3 && s.in_c % 64 == 0 ? kLanes : 0;
}
}  // namespace

DepthwiseDirect::DepthwiseDirect(const ConvShape& s)
    : s_(s),
      rows3x3_(takes_rows3x3(s)),
      same3x3_(takes_same3x3(s)),
      image_(s, padded_row_slack(s, rows3x3_), kLanes),
      dy_image_(padded_dy_shape(s), padded_row_slack(s, rows3x3_), kLanes) {
  ST_CHECK(s.dtype == DType::f32 && s.groups == s.in_c && s.out_c == s.in_c,
           "the direct depthwise convolution runs f32 with groups == in_c == out_c, not ", s.to_string());
  c_ = s.in_c;
  blocks_ = (c_ + kLanes - 1) / kLanes;
  taps_ = s.kernel_h * s.kernel_w;
  out_h_ = s.out_h();
  out_w_ = s.out_w();
  wt_.resize(taps_ * blocks_);
  wt_rotated_.resize(taps_ * blocks_);
  bias_.resize(blocks_);
  if (same3x3_) zero_row_.assign((s.in_w + 2) * c_, 0.0f);
}

// A padded image's rows: row oh + kh for output row oh, whose window starts at column 0.
DepthwiseDirect::Rows3x3Input DepthwiseDirect::padded_rows(const float* padded, const PaddedImage& image) const {
  return {padded, image.row_floats(), 0, nullptr, 0, false};
}

// An unpadded image's rows for 'same' 3x3: row oh - 1 + kh (the zero row above and below the image),
// from column -1, which like column width reads as zero.
DepthwiseDirect::Rows3x3Input DepthwiseDirect::unpadded_rows(const float* image) const {
  return {image, s_.in_w * c_, s_.in_h, zero_row_.data() + c_, c_, true};
}

void DepthwiseDirect::set_weights(const float* w, const float* b) {
  std::fill(wt_.begin(), wt_.end(), Vec16{});
  for (int64_t ch = 0; ch < c_; ++ch)
    for (int64_t t = 0; t < taps_; ++t) wt_[t * blocks_ + ch / kLanes][ch % kLanes] = w[ch * taps_ + t];
  for (int64_t c = 0; c < blocks_; ++c) bias_[c] = b ? load_part(b + c * kLanes, c_ - c * kLanes) : Vec16{};
  for (int64_t t = 0; t < taps_; ++t)
    std::copy(wt_.begin() + t * blocks_, wt_.begin() + (t + 1) * blocks_, wt_rotated_.begin() + (taps_ - 1 - t) * blocks_);
}

void DepthwiseDirect::forward(const float* x, float* y, float* padded) const {
  pad_input(x, padded);
  forward_padded(padded, y);
}

void DepthwiseDirect::forward_padded(const float* padded, float* y) const {
  if (rows3x3_) return rows3x3(padded_rows(padded, image_), out_h_, out_w_, wt_.data(), true, y, false);
  for (int64_t oh = 0; oh < out_h_; ++oh)
    for (int64_t ow = 0; ow < out_w_; ++ow) {
      const float* xw = padded + window(oh, ow);
      float* yq = y + (oh * out_w_ + ow) * c_;
      int64_t c0 = 0;
      for (; c0 + kGroup <= blocks_; c0 += kGroup) forward_blocks<kGroup>(xw, c0, yq);
      for (; c0 < blocks_; ++c0) forward_blocks<1>(xw, c0, yq);
    }
}

template <int kB>
void DepthwiseDirect::forward_blocks(const float* xw, int64_t c0, float* yq) const {
  Vec16 acc[kB];
  for (int i = 0; i < kB; ++i) acc[i] = bias_[c0 + i];
  for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
    for (int64_t kw = 0; kw < s_.kernel_w; ++kw) {
      const float* xs = xw + tap_offset(kh, kw) + c0 * kLanes;
      const Vec16* w = wt_.data() + (kh * s_.kernel_w + kw) * blocks_ + c0;
#pragma GCC unroll 8
      for (int i = 0; i < kB; ++i) acc[i] += load(xs + i * kLanes) * w[i];
    }
  for (int i = 0; i < kB; ++i) store_part(yq + (c0 + i) * kLanes, acc[i], c_ - (c0 + i) * kLanes);
}

void DepthwiseDirect::backward_data(const float* dy, float* dx, float* padded) const {
  if (same3x3_) {
    rows3x3(unpadded_rows(dy), s_.in_h, s_.in_w, wt_rotated_.data(), false, dx, true);
    return stream_fence();
  }
  if (rows3x3_) {
    dy_image_.pad(dy, padded);
    rows3x3(padded_rows(padded, dy_image_), s_.in_h, s_.in_w, wt_rotated_.data(), false, dx, true);
    return stream_fence();
  }
  std::fill(padded, padded + image_.floats(), 0.0f);
  for (int64_t oh = 0; oh < out_h_; ++oh)
    for (int64_t ow = 0; ow < out_w_; ++ow) {
      float* dxw = padded + window(oh, ow);
      const float* dyq = dy + (oh * out_w_ + ow) * c_;
      int64_t c0 = 0;
      for (; c0 + kGroup <= blocks_; c0 += kGroup) backward_data_blocks<kGroup>(dyq, c0, dxw);
      for (; c0 < blocks_; ++c0) backward_data_blocks<1>(dyq, c0, dxw);
    }
  image_.crop(padded, dx);
}

template <int kB>
void DepthwiseDirect::backward_data_blocks(const float* dyq, int64_t c0, float* dxw) const {
  Vec16 d[kB];
  for (int i = 0; i < kB; ++i) d[i] = load_part(dyq + (c0 + i) * kLanes, c_ - (c0 + i) * kLanes);
  for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
    for (int64_t kw = 0; kw < s_.kernel_w; ++kw) {
      float* dxs = dxw + tap_offset(kh, kw) + c0 * kLanes;
      const Vec16* w = wt_.data() + (kh * s_.kernel_w + kw) * blocks_ + c0;
#pragma GCC unroll 8
      for (int i = 0; i < kB; ++i) store(dxs + i * kLanes, load(dxs + i * kLanes) + d[i] * w[i]);
    }
}

void DepthwiseDirect::Gradients::clear() {
  std::fill(dw.begin(), dw.end(), Vec16{});
  std::fill(db.begin(), db.end(), Vec16{});
}

void DepthwiseDirect::Gradients::add(const Gradients& other) {
  for (size_t i = 0; i < dw.size(); ++i) dw[i] += other.dw[i];
  for (size_t i = 0; i < db.size(); ++i) db[i] += other.db[i];
}

DepthwiseDirect::Gradients DepthwiseDirect::make_gradients() const {
  Gradients g;
  g.dw.assign(taps_ * blocks_, Vec16{});
  g.db.assign(blocks_, Vec16{});
  return g;
}

void DepthwiseDirect::backward_weights(const float* x, const float* dy, Gradients& g, float* padded) const {
  pad_input(x, padded);
  backward_weights_padded(padded, dy, g);
}

void DepthwiseDirect::backward_weights_padded(const float* padded, const float* dy, Gradients& g) const {
  if (rows3x3_) return backward_weights_3x3(padded, dy, g);
  for (int64_t oh = 0; oh < out_h_; ++oh)
    for (int64_t ow = 0; ow < out_w_; ++ow) {
      const float* xw = padded + window(oh, ow);
      const float* dyq = dy + (oh * out_w_ + ow) * c_;
      int64_t c0 = 0;
      for (; c0 + kGroup <= blocks_; c0 += kGroup) backward_weights_blocks<kGroup>(xw, dyq, c0, g);
      for (; c0 < blocks_; ++c0) backward_weights_blocks<1>(xw, dyq, c0, g);
    }
}

// The sums stay in memory (L1: taps x blocks vectors); each pixel adds into every tap's.
template <int kB>
void DepthwiseDirect::backward_weights_blocks(const float* xw, const float* dyq, int64_t c0, Gradients& g) const {
  Vec16 d[kB];
  for (int i = 0; i < kB; ++i) {
    d[i] = load_part(dyq + (c0 + i) * kLanes, c_ - (c0 + i) * kLanes);
    g.db[c0 + i] += d[i];
  }
  for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
    for (int64_t kw = 0; kw < s_.kernel_w; ++kw) {
      const float* xs = xw + tap_offset(kh, kw) + c0 * kLanes;
      Vec16* acc = g.dw.data() + (kh * s_.kernel_w + kw) * blocks_ + c0;
#pragma GCC unroll 8
      for (int i = 0; i < kB; ++i) acc[i] += load(xs + i * kLanes) * d[i];
    }
}

// 3x3 at stride 1: out[rows, cols] from `in`, kRowBlock output pixels of a row at a time, for each
// channel block in turn: each kernel row loads the block's kRowBlock + 2 input vectors once for its
// three taps (0.5 loads per FMA, where a pixel at a time loads an input and a weight per FMA).
// Channel blocks innermost read each pixel's channels as one contiguous run (a channel block swept
// along the whole row first would read a cache line per pixel). With stream_out (backward-data's dx,
// which goes to memory) full blocks are written by streaming stores, which skip reading dx's lines
// into cache.
void DepthwiseDirect::rows3x3(const Rows3x3Input& in, int64_t rows, int64_t cols, const Vec16* w, bool bias,
                              float* out, bool stream_out) const {
  if (in.unpadded) return rows3x3_rows<true>(in, rows, cols, w, bias, out, stream_out);
  rows3x3_rows<false>(in, rows, cols, w, bias, out, stream_out);
}

// kEdges: the input is unpadded, its edge columns masked (a template flag, so that the padded loops
// test nothing).
template <bool kEdges>
void DepthwiseDirect::rows3x3_rows(const Rows3x3Input& in, int64_t rows, int64_t cols, const Vec16* w, bool bias,
                                   float* out, bool stream_out) const {
  for (int64_t oh = 0; oh < rows; ++oh) {
    const float* r[3] = {in.row(oh, 0), in.row(oh, 1), in.row(oh, 2)};
    float* dst = out + oh * cols * c_;
    int64_t ow = 0;
    for (; ow + kRowBlock <= cols; ow += kRowBlock)
      rows3x3_blocks<kRowBlock, kEdges>(r, ow * c_, in.edges(ow, kRowBlock, cols), w, bias, dst + ow * c_,
                                        stream_out);
    const Edges e = in.edges(ow, cols - ow, cols);
    float* d = dst + ow * c_;
    switch (cols - ow) {
      case 7: rows3x3_blocks<7, kEdges>(r, ow * c_, e, w, bias, d, stream_out); break;
      case 6: rows3x3_blocks<6, kEdges>(r, ow * c_, e, w, bias, d, stream_out); break;
      case 5: rows3x3_blocks<5, kEdges>(r, ow * c_, e, w, bias, d, stream_out); break;
      case 4: rows3x3_blocks<4, kEdges>(r, ow * c_, e, w, bias, d, stream_out); break;
      case 3: rows3x3_blocks<3, kEdges>(r, ow * c_, e, w, bias, d, stream_out); break;
      case 2: rows3x3_blocks<2, kEdges>(r, ow * c_, e, w, bias, d, stream_out); break;
      case 1: rows3x3_blocks<1, kEdges>(r, ow * c_, e, w, bias, d, stream_out); break;
      default: break;
    }
  }
}

// kP adjacent output pixels, every channel block in turn: a pixel's channels are contiguous, so the
// block's inputs are read as runs of whole pixels. r: the three kernel rows at column 0's window.
template <int kP, bool kEdges>
void DepthwiseDirect::rows3x3_blocks(const float* const* r, int64_t offset, Edges e, const Vec16* w, bool bias,
                                     float* dst, bool stream_out) const {
  const float* src[3] = {r[0] + offset, r[1] + offset, r[2] + offset};
  for (int64_t cb = 0; cb < blocks_; ++cb)
    rows3x3_block<kP, kEdges>(src, cb * kLanes, e, w + cb, bias ? bias_[cb] : Vec16{}, dst + cb * kLanes,
                              c_ - cb * kLanes, stream_out);
}

// kP adjacent output pixels of one channel block (at `at` floats into each row); w points at the
// block's tap 0 ([taps, blocks]). The window's first and last input columns read as zero where e says.
template <int kP, bool kEdges>
void DepthwiseDirect::rows3x3_block(const float* const* src, int64_t at, Edges e, const Vec16* w, Vec16 bias,
                                    float* dst, int64_t lanes, bool stream_out) const {
  Vec16 acc[kP];
  for (int j = 0; j < kP; ++j) acc[j] = bias;
  for (int kh = 0; kh < 3; ++kh) {
    const float* row = src[kh] + at;
    Vec16 xv[kP + 2];
    xv[0] = kEdges && e.zero_first ? Vec16{} : load(row);
    for (int j = 1; j < kP + 1; ++j) xv[j] = load(row + j * c_);
    xv[kP + 1] = kEdges && e.zero_last ? Vec16{} : load(row + (kP + 1) * c_);
    const Vec16 w0 = w[(kh * 3) * blocks_], w1 = w[(kh * 3 + 1) * blocks_], w2 = w[(kh * 3 + 2) * blocks_];
    for (int j = 0; j < kP; ++j) {
      acc[j] += xv[j] * w0;
      acc[j] += xv[j + 1] * w1;
      acc[j] += xv[j + 2] * w2;
    }
  }
  if (stream_out && lanes >= kLanes) {
#pragma GCC unroll 8
    for (int j = 0; j < kP; ++j) stream(dst + j * c_, acc[j]);
  } else if (lanes >= kLanes) {  // full blocks apart, so that the accumulators are stored from registers
#pragma GCC unroll 8
    for (int j = 0; j < kP; ++j) store(dst + j * c_, acc[j]);
  } else {
    for (int j = 0; j < kP; ++j) store_part(dst + j * c_, acc[j], lanes);
  }
}

// 3x3 at stride 1: per channel block, the nine tap sums in registers over the whole image; along a row
// each kernel row's three input vectors slide by one pixel (one new load per kernel row and pixel).
void DepthwiseDirect::backward_weights_3x3(const float* padded, const float* dy, Gradients& g) const {
  const int64_t row = image_.row_floats();
  for (int64_t cb = 0; cb < blocks_; ++cb) {
    Vec16 acc[9];
    for (int t = 0; t < 9; ++t) acc[t] = g.dw[t * blocks_ + cb];
    Vec16 db = g.db[cb];
    const int64_t lanes = c_ - cb * kLanes;
    for (int64_t oh = 0; oh < out_h_; ++oh) {
      const float* src = padded + oh * row + cb * kLanes;
      const float* d = dy + oh * out_w_ * c_ + cb * kLanes;
      Vec16 x0[3], x1[3];
      for (int kh = 0; kh < 3; ++kh) {
        x0[kh] = load(src + kh * row);
        x1[kh] = load(src + kh * row + c_);
      }
      for (int64_t ow = 0; ow < out_w_; ++ow) {
        const Vec16 dv = load_part(d + ow * c_, lanes);
        db += dv;
        for (int kh = 0; kh < 3; ++kh) {
          const Vec16 x2 = load(src + kh * row + (ow + 2) * c_);
          acc[kh * 3] += x0[kh] * dv;
          acc[kh * 3 + 1] += x1[kh] * dv;
          acc[kh * 3 + 2] += x2 * dv;
          x0[kh] = x1[kh];
          x1[kh] = x2;
        }
      }
    }
    for (int t = 0; t < 9; ++t) g.dw[t * blocks_ + cb] = acc[t];
    g.db[cb] = db;
  }
}

void DepthwiseDirect::write_out(const Gradients& g, float* dw, float* db) const {
  for (int64_t ch = 0; ch < c_; ++ch)
    for (int64_t t = 0; t < taps_; ++t) dw[ch * taps_ + t] = g.dw[t * blocks_ + ch / kLanes][ch % kLanes];
  if (db)
    for (int64_t ch = 0; ch < c_; ++ch) db[ch] = g.db[ch / kLanes][ch % kLanes];
}

}  // namespace scaletrain::cpu
