// Direct f32 convolution for few taps per output (K = IC * KH * KW <= kFewTapsMax: an image network's
// first layer, 1-3 input channels), vectorized across output channels in 16-float blocks. oneDNN 2.6
// vectorizes its direct kernels across input channels, which such a layer does not have. Here each
// image is first copied into a zero-padded buffer, so that an output pixel's K inputs are KH
// contiguous runs of KW * IC floats; they are broadcast against [K, OC] weights, the forward is one
// pass that writes y, and the weight gradient one pass over dy in strips of pixels whose inputs stay
// in L1 while register tiles of taps x channel blocks sum them. As an ActivatedConvOp (a first Conv2D
// with an activation) the forward applies the activation to each tile of output while it is in L1,
// and the weight gradient forms each strip's dpre = act'(y) * dy in a per-thread L1 buffer: neither
// the pre-activation nor its gradient goes to memory.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "scaletrain/backend/cpu/activated_direct_conv.hpp"
#include "scaletrain/backend/cpu/activation_loops.hpp"
#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/backend/cpu/padded_image.hpp"
#include "scaletrain/backend/cpu/vec16.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::cpu {
namespace {

constexpr int64_t kFewTapsVectors = (kFewTapsMax + kLanes - 1) / kLanes;
constexpr int64_t kTapGroup = 9;       // taps whose weight-gradient sums one register tile holds
constexpr int64_t kStripPixels = 32;   // pixels per strip of the weight gradient (inputs and dpre in L1)

class FewTapsConv final : public ConvOp {
 public:
  // act: applied to y by forward, and taken back out of dy by backward_weights_from_output.
  explicit FewTapsConv(const ConvShape& s, Activation act = Activation::none) : s_(s), act_(act), image_(s) {
    s.validate();
    ST_CHECK(s.dtype == DType::f32 && s.groups == 1 && taps(s) <= kFewTapsMax,
             "the few-taps convolution runs ungrouped f32 with at most ", kFewTapsMax, " taps, not ", s.to_string());
    out_pixels_ = s.out_h() * s.out_w();
    k_ = taps(s);
    blocks_ = (s.out_c + kLanes - 1) / kLanes;
    window_ = image_.window_offsets(s);
    threads_ = std::max(1, omp_get_max_threads());
    padded_.resize(threads_ * image_.floats());
    wt_.resize(k_ * blocks_);
    bias_.resize(blocks_);
    wk_.resize(s.out_c * tap_vectors());
    dw_partial_.resize(threads_ * k_ * blocks_);
    db_partial_.resize(threads_ * blocks_);
    padded_taps_ = (k_ + kTapGroup - 1) / kTapGroup * kTapGroup;
    strip_x_.assign(threads_ * kStripPixels * padded_taps_, 0.0f);
    if (act != Activation::none)
      strip_d_ = Tensor({threads_ * kStripPixels * s.out_c}, DType::f32, "few-taps activation gradient strip");
  }

  // y[pixel, oc] = b[oc] + sum over taps t of x_t(pixel) * w[oc, t]. Tiles of kP pixels x kB channel
  // blocks with kP * kB = 8 keep eight independent accumulator chains in flight.
  void forward(const void* xv, const void* wv, const float* b, void* yv) override {
    transpose_weights(static_cast<const float*>(wv));
    Vec16* bv = bias_.data();
    for (int64_t c = 0; c < blocks_; ++c) bv[c] = b && s_.bias ? load_part(b + c * kLanes, s_.out_c - c * kLanes) : Vec16{};
    const float* x = static_cast<const float*>(xv);
    float* y = static_cast<float*>(yv);
    if (blocks_ >= 8) forward_images<1, 8>(x, bv, y);
    else if (blocks_ >= 4) forward_images<2, 4>(x, bv, y);
    else if (blocks_ >= 2) forward_images<4, 2>(x, bv, y);
    else forward_images<8, 1>(x, bv, y);
  }

  // dx[input pixel, ic] = sum over (output pixel, tap) that reach it of dy[pixel, :] . w[:, tap]: per
  // output pixel, dcol[taps] = sum over oc of dy[pixel, oc] * w[oc, taps] (vectors across the taps,
  // four partial sums over oc), added onto a padded image that is then cropped into dx.
  void backward_data(const void* dyv, const void* wv, void* dxv) override {
    const float* dy = static_cast<const float*>(dyv);
    float* dx = static_cast<float*>(dxv);
    transpose_weights_for_data(static_cast<const float*>(wv));
    const int64_t oc = s_.out_c, kv = tap_vectors();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t n = 0; n < s_.batch; ++n) {
      float* dxp = padded_.data() + omp_get_thread_num() * image_.floats();
      std::fill(dxp, dxp + image_.floats(), 0.0f);
      for (int64_t q = 0; q < out_pixels_; ++q) {
        Vec16 part[4][kFewTapsVectors] = {};
        const float* dyq = dy + (n * out_pixels_ + q) * oc;
        for (int64_t o = 0; o < oc; ++o)
          for (int64_t v = 0; v < kv; ++v) part[o % 4][v] += dyq[o] * wk_[o * kv + v];
        float dcol[kFewTapsVectors * kLanes];
        for (int64_t v = 0; v < kv; ++v) store(dcol + v * kLanes, part[0][v] + part[1][v] + part[2][v] + part[3][v]);
        scatter_add(dcol, dxp + window_[q]);
      }
      image_.crop(dxp, dx + n * image_.image_floats());
    }
  }

  // dw[oc, t] = sum over pixels of dy[pixel, oc] * x_t(pixel); db[oc] = sum over pixels of dy[pixel, oc].
  // Each thread sums its images into its own partials; the partials are added in thread order.
  void backward_weights(const void* xv, const void* dyv, float* dw, float* db) override {
    backward_weights_from_output(static_cast<const float*>(xv), nullptr, static_cast<const float*>(dyv), dw, db);
  }

  // backward_weights where dy is the gradient of y = act(pre) (y: what forward wrote; null as for
  // backward_weights). An image's pixels go in strips of kStripPixels: the strip's inputs are gathered
  // and its dpre formed into per-thread buffers in L1, then each pair of channel blocks sums the strip
  // into kTapGroup x 2 accumulators held in registers.
  void backward_weights_from_output(const float* x, const float* y, const float* dy, float* dw, float* db) {
    ST_CHECK(!s_.bias || db != nullptr, "convolution ", s_.to_string(),
             " has a bias but no bias gradient buffer was given");
    const int64_t oc = s_.out_c, kb = k_ * blocks_, blocks = blocks_, k = k_;
    std::fill(dw_partial_.begin(), dw_partial_.end(), Vec16{});
    std::fill(db_partial_.begin(), db_partial_.end(), Vec16{});
    const bool from_output = y && act_ != Activation::none;
#pragma omp parallel num_threads(threads_)
    {
      const int th = omp_get_thread_num();
      float* xp = padded_.data() + th * image_.floats();
      float* strip_x = strip_x_.data() + th * kStripPixels * padded_taps_;
      float* strip_d = strip_d_.data<float>() + th * kStripPixels * oc;
#pragma omp for schedule(static)
      for (int64_t n = 0; n < s_.batch; ++n) {
        image_.pad(x + n * image_.image_floats(), xp);
        for (int64_t q0 = 0; q0 < out_pixels_; q0 += kStripPixels) {
          const int64_t pixels = std::min(kStripPixels, out_pixels_ - q0);
          for (int64_t p = 0; p < pixels; ++p) gather(xp + window_[q0 + p], strip_x + p * padded_taps_);
          const int64_t at = (n * out_pixels_ + q0) * oc;
          const float* d = dy + at;
          if (from_output) {
            activate_backward_from_output(act_, y + at, d, strip_d, pixels * oc);
            d = strip_d;
          }
          sum_strip(strip_x, d, pixels, dw_partial_.data() + th * kb, db_partial_.data() + th * blocks);
        }
      }
    }
    for (int th = 1; th < threads_; ++th) {
      for (int64_t i = 0; i < kb; ++i) dw_partial_[i] += dw_partial_[th * kb + i];
      for (int64_t c = 0; c < blocks; ++c) db_partial_[c] += db_partial_[th * blocks + c];
    }
    // [K, OC] blocks back to OIHW [OC, K].
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t j = 0; j < k; ++j) dw[o * k + j] = dw_partial_[tap_of_oihw(j) * blocks + o / kLanes][o % kLanes];
    if (db && s_.bias)
      for (int64_t o = 0; o < oc; ++o) db[o] = db_partial_[o / kLanes][o % kLanes];
  }

 private:
  static int64_t taps(const ConvShape& s) { return s.in_c * s.kernel_h * s.kernel_w; }
  int64_t tap_vectors() const { return (k_ + kLanes - 1) / kLanes; }

  // acc[tap, block] += sum over the strip's pixels of x_tap * d[pixel, block], db_acc[block] += the
  // sum of d; strip_x holds each pixel's taps zero-padded to padded_taps_.
  void sum_strip(const float* strip_x, const float* d, int64_t pixels, Vec16* acc, Vec16* db_acc) const {
    int64_t c0 = 0;
    for (; c0 + 2 <= blocks_; c0 += 2) sum_strip_blocks<2>(strip_x, d, pixels, c0, acc, db_acc);
    if (c0 < blocks_) sum_strip_blocks<1>(strip_x, d, pixels, c0, acc, db_acc);
  }

  template <int kB>
  void sum_strip_blocks(const float* strip_x, const float* d, int64_t pixels, int64_t c0, Vec16* acc,
                        Vec16* db_acc) const {
    const int64_t oc = s_.out_c;
    for (int64_t g = 0; g < padded_taps_; g += kTapGroup) {
      Vec16 a[kTapGroup][kB] = {}, sum[kB] = {};
      for (int64_t p = 0; p < pixels; ++p) {
        Vec16 dv[kB];
        for (int b = 0; b < kB; ++b) {
          dv[b] = load_part(d + p * oc + (c0 + b) * kLanes, oc - (c0 + b) * kLanes);
          sum[b] += dv[b];
        }
        const float* xt = strip_x + p * padded_taps_ + g;
#pragma GCC unroll 9
        for (int t = 0; t < kTapGroup; ++t)
          for (int b = 0; b < kB; ++b) a[t][b] += xt[t] * dv[b];
      }
      for (int t = 0; t < kTapGroup && g + t < k_; ++t)
        for (int b = 0; b < kB; ++b) acc[(g + t) * blocks_ + c0 + b] += a[t][b];
      if (g == 0)
        for (int b = 0; b < kB; ++b) db_acc[c0 + b] += sum[b];
    }
  }

  // Images in parallel; an image's pixels in tiles of kP (the last with fewer).
  template <int kP, int kB>
  void forward_images(const float* x, const Vec16* bias, float* y) {
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t n = 0; n < s_.batch; ++n) {
      float* xp = padded_.data() + omp_get_thread_num() * image_.floats();
      image_.pad(x + n * image_.image_floats(), xp);
      float* yn = y + n * out_pixels_ * s_.out_c;
      int64_t q = 0;
      for (; q + kP <= out_pixels_; q += kP) forward_tile<kP, kB>(xp, bias, q, yn);
      for (; q < out_pixels_; ++q) forward_tile<1, kB>(xp, bias, q, yn);
    }
  }

  template <int kP, int kB>
  void forward_tile(const float* xp, const Vec16* bias, int64_t q0, float* yn) const {
    float xt[kP][kFewTapsMax];
    for (int p = 0; p < kP; ++p) gather(xp + window_[q0 + p], xt[p]);
    const int64_t oc = s_.out_c, k = k_, blocks = blocks_;
    const Vec16* wt = wt_.data();
    float* yq = yn + q0 * oc;
    int64_t c0 = 0;
    for (; c0 + kB <= blocks; c0 += kB) forward_tile_blocks<kP, kB>(xt, k, wt, blocks, bias, c0, oc, yq);
    for (; c0 < blocks; ++c0) forward_tile_blocks<kP, 1>(xt, k, wt, blocks, bias, c0, oc, yq);
    activate(act_, yq, yq, kP * oc);  // the tile's outputs are still in L1
  }

  template <int kP, int kB>
  static void forward_tile_blocks(const float (*xt)[kFewTapsMax], int64_t k, const Vec16* wt, int64_t blocks,
                                  const Vec16* bias, int64_t c0, int64_t oc, float* y) {
    Vec16 acc[kP][kB];
    for (int p = 0; p < kP; ++p)
      for (int i = 0; i < kB; ++i) acc[p][i] = bias[c0 + i];
    for (int64_t t = 0; t < k; ++t) {
      const Vec16* w = wt + t * blocks + c0;
#pragma GCC unroll 8
      for (int p = 0; p < kP; ++p)
#pragma GCC unroll 8
        for (int i = 0; i < kB; ++i) acc[p][i] += xt[p][t] * w[i];
    }
    for (int p = 0; p < kP; ++p)
      for (int i = 0; i < kB; ++i) store_part(y + p * oc + (c0 + i) * kLanes, acc[p][i], oc - (c0 + i) * kLanes);
  }

  // Taps are ordered (kh, kw, ic), the order of NHWC x, so a kernel row's taps are contiguous in x.
  int64_t tap_of_oihw(int64_t j) const { return nhwc_tap_of_oihw(s_, j); }

  // OIHW weights [OC, K] as [K, blocks] of 16 channels, zero beyond OC.
  void transpose_weights(const float* w) {
    std::fill(wt_.begin(), wt_.end(), Vec16{});
    for (int64_t o = 0; o < s_.out_c; ++o)
      for (int64_t j = 0; j < k_; ++j) wt_[tap_of_oihw(j) * blocks_ + o / kLanes][o % kLanes] = w[o * k_ + j];
  }
  // OIHW weights as [OC, tap vectors], zero beyond K.
  void transpose_weights_for_data(const float* w) {
    const int64_t kv = tap_vectors();
    std::fill(wk_.begin(), wk_.end(), Vec16{});
    for (int64_t o = 0; o < s_.out_c; ++o)
      for (int64_t j = 0; j < k_; ++j) {
        const int64_t t = tap_of_oihw(j);
        wk_[o * kv + t / kLanes][t % kLanes] = w[o * k_ + j];
      }
  }

  // The K inputs of the window at xw (its top-left in the padded image): KH runs of KW * IC floats.
  void gather(const float* xw, float* xt) const {
    const int64_t run = s_.kernel_w * s_.in_c, stride = image_.row_floats();
    for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
      for (int64_t i = 0; i < run; ++i) xt[kh * run + i] = xw[kh * stride + i];
  }
  void scatter_add(const float* dcol, float* xw) const {
    const int64_t run = s_.kernel_w * s_.in_c, stride = image_.row_floats();
    for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
      for (int64_t i = 0; i < run; ++i) xw[kh * stride + i] += dcol[kh * run + i];
  }

  ConvShape s_;
  Activation act_;
  PaddedImage image_;
  int64_t out_pixels_ = 0;    // OH * OW
  int64_t k_ = 0;             // taps: IC * KH * KW
  int64_t blocks_ = 0;        // 16-channel blocks covering OC
  int threads_ = 1;
  std::vector<int64_t> window_;    // [OH * OW]: offset of each output pixel's window in the padded image
  std::vector<float> padded_;      // [threads, padded image]
  std::vector<Vec16> bias_;        // [blocks]
  std::vector<Vec16> wt_;          // [K, blocks]: forward's and backward-weights' weights
  std::vector<Vec16> wk_;          // [OC, tap vectors]: backward-data's weights, vectors across the taps
  std::vector<Vec16> dw_partial_;  // [threads, K, blocks]
  std::vector<Vec16> db_partial_;  // [threads, blocks]
  int64_t padded_taps_ = 0;        // K rounded up to whole tap groups
  std::vector<float> strip_x_;     // [threads, strip pixels, padded taps]: the strip's inputs, zero past K
  Tensor strip_d_;                 // [threads, strip pixels, OC] with an activation: the strip's dpre
};

}  // namespace

// At least kFewTapsMinOutChannels outputs: with fewer, a 16-lane block is partly empty or too few
// blocks share each gathered input, and oneDNN's forward is the faster (perf/bench_conv).
bool prefers_few_taps(const ConvShape& s) {
  return s.dtype == DType::f32 && s.groups == 1 && s.in_c * s.kernel_h * s.kernel_w <= kFewTapsMax &&
         s.out_c >= kFewTapsMinOutChannels && !is_pointwise(s);
}

std::unique_ptr<ConvOp> make_few_taps_conv(const ConvShape& s) { return std::make_unique<FewTapsConv>(s); }

std::unique_ptr<ActivatedConvOp> make_few_taps_activated_conv(const ConvShape& s, Activation act) {
  return std::make_unique<ActivatedDirectConv<FewTapsConv>>(s, act);
}

}  // namespace scaletrain::cpu
