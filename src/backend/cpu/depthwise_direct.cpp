// The direct depthwise convolution's per-image kernels (depthwise_direct.hpp). Channel blocks go in
// groups of eight (eight accumulator chains in flight), the rest one by one; a tail block's
// full-vector loads may read up to 15 floats past a pixel's channels (into the next pixel, or the
// buffer's slack), whose lanes meet zero weights or a zero gradient and are never stored.
#include "scaletrain/backend/cpu/depthwise_direct.hpp"

#include <algorithm>

#include "scaletrain/core/error.hpp"

namespace scaletrain::cpu {
namespace {
constexpr int kGroup = 8;
}  // namespace

DepthwiseDirect::DepthwiseDirect(const ConvShape& s) : s_(s), image_(s, 0, kLanes) {
  ST_CHECK(s.dtype == DType::f32 && s.groups == s.in_c && s.out_c == s.in_c,
           "the direct depthwise convolution runs f32 with groups == in_c == out_c, not ", s.to_string());
  c_ = s.in_c;
  blocks_ = (c_ + kLanes - 1) / kLanes;
  taps_ = s.kernel_h * s.kernel_w;
  out_h_ = s.out_h();
  out_w_ = s.out_w();
  wt_.resize(taps_ * blocks_);
  bias_.resize(blocks_);
}

void DepthwiseDirect::set_weights(const float* w, const float* b) {
  std::fill(wt_.begin(), wt_.end(), Vec16{});
  for (int64_t ch = 0; ch < c_; ++ch)
    for (int64_t t = 0; t < taps_; ++t) wt_[t * blocks_ + ch / kLanes][ch % kLanes] = w[ch * taps_ + t];
  for (int64_t c = 0; c < blocks_; ++c) bias_[c] = b ? load_part(b + c * kLanes, c_ - c * kLanes) : Vec16{};
}

void DepthwiseDirect::forward(const float* x, float* y, float* padded) const {
  image_.pad(x, padded);
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
  image_.pad(x, padded);
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

void DepthwiseDirect::write_out(const Gradients& g, float* dw, float* db) const {
  for (int64_t ch = 0; ch < c_; ++ch)
    for (int64_t t = 0; t < taps_; ++t) dw[ch * taps_ + t] = g.dw[t * blocks_ + ch / kLanes][ch % kLanes];
  if (db)
    for (int64_t ch = 0; ch < c_; ++ch) db[ch] = g.db[ch / kLanes][ch % kLanes];
}

}  // namespace scaletrain::cpu
