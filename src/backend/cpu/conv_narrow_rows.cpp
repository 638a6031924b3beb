// Direct f32 convolution of one input channel into few outputs (at most 16: LeNet's first layer),
// vectorized across 16 consecutive output pixels of a row instead of across channels, which such a
// layer has too few of to fill a vector. Each image is zero-padded once (rows with 16 floats of
// slack), so a tap's 16 inputs are one contiguous load broadcast-multiplied by each output channel's
// weight. Forward and the weight gradient run here; the data gradient (not needed by a first layer)
// is the few-taps op's. With the layer's activation (NarrowRowsActivatedConv), the forward applies it
// to each tile of output while it is in L1, and the weight gradient takes the activation's gradient
// from y image by image, as it transposes dy: neither pre nor dpre goes to memory.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "scaletrain/backend/cpu/activation_loops.hpp"
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/backend/cpu/padded_image.hpp"
#include "scaletrain/backend/cpu/vec16.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::cpu {
namespace {

constexpr int64_t kMaxOutChannels = kLanes;

// Stores kOC planar accumulators (channel o's 16 consecutive pixels) as the first `floats` values of
// those pixels in NHWC order: output vector j, lane l is float 16j + l, that is pixel (16j + l) / kOC,
// channel (16j + l) % kOC. With AVX-512, per output vector one two-source permute per pair of
// channels, merged under the pair's lanes (36 instructions for LeNet's 6 channels, where storing lane
// by lane took 96 extracts and stores: perf/bench_conv forward 0.48 -> 0.39 ms at batch 128); without, lane
// by lane.
template <int kOC>
class PlanarToNhwc {
 public:
  PlanarToNhwc() {
    for (int j = 0; j < kOC; ++j)
      for (int q = 0; q < kPairs; ++q) {
        mask_[j][q] = 0;
        for (int l = 0; l < kLanes; ++l) {
          const int i = kLanes * j + l, pixel = i / kOC, channel = i % kOC;
          const bool in_pair = channel / 2 == q;
          index_[j][q][l] = in_pair ? (channel - 2 * q) * kLanes + pixel : 0;
          if (in_pair) mask_[j][q] |= static_cast<uint16_t>(1u << l);
        }
      }
  }
  void store(const Vec16* acc, float* out, int64_t floats) const {
#ifdef __AVX512F__
    for (int j = 0; j < kOC && kLanes * j < floats; ++j) {
      __m512 v = _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int q = 0; q < kPairs; ++q) {
        const __m512 a = reinterpret_cast<__m512>(acc[2 * q]);
        const __m512 b = reinterpret_cast<__m512>(acc[std::min(2 * q + 1, kOC - 1)]);
        const __m512i index = _mm512_load_si512(index_[j][q]);
        v = _mm512_mask_mov_ps(v, mask_[j][q], _mm512_permutex2var_ps(a, index, b));
      }
      store_part(out + kLanes * j, reinterpret_cast<Vec16>(v), floats - kLanes * j);
    }
#else
    for (int64_t i = 0; i < floats; ++i) out[i] = acc[i % kOC][i / kOC];
#endif
  }

 private:
  static constexpr int kPairs = (kOC + 1) / 2;
  alignas(64) int32_t index_[kOC][kPairs][kLanes];
  uint16_t mask_[kOC][kPairs];
};

// The inverse for the weight gradient: the first `floats` NHWC values of 16 pixels (zero past them)
// as kOC planar vectors, pixel p of channel o in lane p of planar[o]. With AVX-512, per channel one
// two-source permute per pair of input vectors, merged under the pair's lanes (perf/bench_conv weight
// gradient 0.66 -> 0.56 ms at batch 128, against a strided copy lane by lane).
template <int kOC>
class NhwcToPlanar {
 public:
  NhwcToPlanar() {
    for (int o = 0; o < kOC; ++o)
      for (int q = 0; q < kPairs; ++q) {
        mask_[o][q] = 0;
        for (int l = 0; l < kLanes; ++l) {
          const int i = l * kOC + o, vec = i / kLanes;
          const bool in_pair = vec / 2 == q;
          index_[o][q][l] = in_pair ? (vec - 2 * q) * kLanes + i % kLanes : 0;
          if (in_pair) mask_[o][q] |= static_cast<uint16_t>(1u << l);
        }
      }
  }
  void load(const float* in, int64_t floats, Vec16* planar) const {
#ifdef __AVX512F__
    __m512 v[kOC];
    for (int k = 0; k < kOC; ++k)
      v[k] = kLanes * k < floats ? reinterpret_cast<__m512>(load_part(in + kLanes * k, floats - kLanes * k))
                                 : _mm512_setzero_ps();
    for (int o = 0; o < kOC; ++o) {
      __m512 out = _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int q = 0; q < kPairs; ++q) {
        const __m512i index = _mm512_load_si512(index_[o][q]);
        const __m512 b = v[std::min(2 * q + 1, kOC - 1)];
        out = _mm512_mask_mov_ps(out, mask_[o][q], _mm512_permutex2var_ps(v[2 * q], index, b));
      }
      planar[o] = reinterpret_cast<Vec16>(out);
    }
#else
    for (int o = 0; o < kOC; ++o) {
      planar[o] = Vec16{};
      for (int64_t p = 0; p * kOC + o < floats; ++p) planar[o][p] = in[p * kOC + o];
    }
#endif
  }

 private:
  static constexpr int kPairs = (kOC + 1) / 2;
  alignas(64) int32_t index_[kOC][kPairs][kLanes];
  uint16_t mask_[kOC][kPairs];
};

template <int kOC>
const NhwcToPlanar<kOC>& nhwc_to_planar() {
  static const NhwcToPlanar<kOC> table;
  return table;
}

template <int kOC>
const PlanarToNhwc<kOC>& planar_to_nhwc() {
  static const PlanarToNhwc<kOC> table;
  return table;
}

class NarrowRowsConv final : public ConvOp {
 public:
  static bool runs(const ConvShape& s) {
    return s.dtype == DType::f32 && s.groups == 1 && s.in_c == 1 && s.stride_w == 1 && s.out_c <= kMaxOutChannels &&
           s.kernel_h * s.kernel_w <= kFewTapsMax;
  }

  explicit NarrowRowsConv(const ConvShape& s, Activation act = Activation::none)
      : s_((s.validate(), s)), act_(act), image_(s, kLanes) {
    ST_CHECK(runs(s), "the narrow-rows convolution runs f32, one input channel, stride 1 along rows, at most ",
             kMaxOutChannels, " outputs and ", kFewTapsMax, " taps, not ", s.to_string());
    data_gradient_ = make_few_taps_conv(s);
    out_h_ = s.out_h();
    out_w_ = s.out_w();
    taps_ = s.kernel_h * s.kernel_w;
    threads_ = std::max(1, omp_get_max_threads());
    padded_ = Tensor({threads_ * image_.floats()}, DType::f32, "narrow-rows padded images");
    planar_w_ = (out_w_ + kLanes - 1) / kLanes * kLanes;
    planar_floats_ = s.out_c * out_h_ * planar_w_;
    planar_dy_ = Tensor({threads_ * planar_floats_}, DType::f32, "narrow-rows planar dy");
    if (act != Activation::none)
      image_dpre_ = Tensor({threads_ * image_outputs()}, DType::f32, "narrow-rows image dpre");
    w_.resize(taps_ * s.out_c);
    dw_sums_.resize(threads_ * s.out_c * taps_);
    db_sums_.resize(threads_ * s.out_c);
  }

  void forward(const void* x, const void* w, const float* b, void* y) override {
    set_weights(static_cast<const float*>(w));
    with_out_channels([&](auto oc) {
      forward_images<decltype(oc)::value>(static_cast<const float*>(x), s_.bias ? b : nullptr, static_cast<float*>(y));
    });
  }
  void backward_data(const void* dy, const void* w, void* dx) override { data_gradient_->backward_data(dy, w, dx); }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    backward_weights_from_output(static_cast<const float*>(x), nullptr, static_cast<const float*>(dy), dw, db);
  }
  // The weight gradient from dy, the gradient of y = act(pre); with y null, dy is dpre itself.
  void backward_weights_from_output(const float* x, const float* y, const float* dy, float* dw, float* db) {
    ST_CHECK(!s_.bias || db != nullptr, "convolution ", s_.to_string(),
             " has a bias but no bias gradient buffer was given");
    with_out_channels([&](auto oc) { backward_weights_images<decltype(oc)::value>(x, y, dy); });
    // Thread sums in thread order, then the 16 lanes of each, into OIHW dw and db.
    const int64_t per_thread = s_.out_c * taps_;
    for (int th = 1; th < threads_; ++th) {
      for (int64_t i = 0; i < per_thread; ++i) dw_sums_[i] += dw_sums_[th * per_thread + i];
      for (int64_t o = 0; o < s_.out_c; ++o) db_sums_[o] += db_sums_[th * s_.out_c + o];
    }
    for (int64_t i = 0; i < per_thread; ++i) dw[i] = lane_sum(dw_sums_[i]);
    if (db && s_.bias)
      for (int64_t o = 0; o < s_.out_c; ++o) db[o] = lane_sum(db_sums_[o]);
  }

 private:
  // f(std::integral_constant<int, OC>{}): the kernels are compiled per output channel count, so
  // their per-channel accumulators are registers.
  template <class F, int kOC = 1>
  void with_out_channels(F&& f) {
    if constexpr (kOC <= kMaxOutChannels) {
      if (s_.out_c == kOC) return f(std::integral_constant<int, kOC>{});
      with_out_channels<F, kOC + 1>(std::forward<F>(f));
    }
  }

  template <int kOC>
  void forward_images(const float* x, const float* b, float* y) {
    const PlanarToNhwc<kOC>& to_nhwc = planar_to_nhwc<kOC>();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t n = 0; n < s_.batch; ++n) {
      float* xp = padded_.data<float>() + omp_get_thread_num() * image_.floats();
      image_.pad(x + n * image_.image_floats(), xp);
      for (int64_t oh = 0; oh < out_h_; ++oh)
        for (int64_t ow0 = 0; ow0 < out_w_; ow0 += kLanes) {
          Vec16 acc[kOC];
          for (int o = 0; o < kOC; ++o) acc[o] = Vec16{} + (b ? b[o] : 0.0f);
          const float* row0 = xp + oh * s_.stride_h * image_.row_floats() + ow0;
          for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
            for (int64_t kw = 0; kw < s_.kernel_w; ++kw) {
              const Vec16 xv = load(row0 + kh * image_.row_floats() + kw);
              const float* w = w_.data() + (kh * s_.kernel_w + kw) * kOC;
#pragma GCC unroll 16
              for (int o = 0; o < kOC; ++o) acc[o] += xv * w[o];
            }
          float* yq = y + ((n * out_h_ + oh) * out_w_ + ow0) * kOC;
          const int64_t pixels = std::min<int64_t>(kLanes, out_w_ - ow0);
          to_nhwc.store(acc, yq, pixels * kOC);
          activate(act_, yq, yq, pixels * kOC);  // the tile's outputs are still in L1
        }
    }
  }

  // Per image: dy (with y: the activation's gradient act'(y) * dy, formed in L2) transposed to planar
  // [OC, OH, OW rounded up to 16] (zero past each row's end), then for each tap one sweep over the
  // image with one register accumulator per output channel.
  template <int kOC>
  void backward_weights_images(const float* x, const float* y, const float* dy) {
    std::fill(dw_sums_.begin(), dw_sums_.end(), Vec16{});
    std::fill(db_sums_.begin(), db_sums_.end(), Vec16{});
#pragma omp parallel num_threads(threads_)
    {
      const int th = omp_get_thread_num();
      float* xp = padded_.data<float>() + th * image_.floats();
      float* dyt = planar_dy_.data<float>() + th * planar_floats_;
      float* dpre = y && act_ != Activation::none ? image_dpre_.data<float>() + th * image_outputs() : nullptr;
      Vec16* dw = dw_sums_.data() + th * kOC * taps_;  // [OC, taps]
      Vec16* db = db_sums_.data() + th * kOC;
      const int64_t row = image_.row_floats();
#pragma omp for schedule(static)
      for (int64_t n = 0; n < s_.batch; ++n) {
        image_.pad(x + n * image_.image_floats(), xp);
        const float* dyn = dy + n * image_outputs();
        if (dpre) {
          activate_backward_from_output(act_, y + n * image_outputs(), dyn, dpre, image_outputs());
          dyn = dpre;
        }
        transpose_dy<kOC>(dyn, dyt);
        for (int o = 0; o < kOC; ++o)
          for (int64_t i = 0; i < out_h_ * planar_w_; i += kLanes) db[o] += load(dyt + o * out_h_ * planar_w_ + i);
        for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
          for (int64_t kw = 0; kw < s_.kernel_w; ++kw) {
            Vec16 acc[kOC] = {};
            for (int64_t oh = 0; oh < out_h_; ++oh) {
              const float* xrow = xp + (oh * s_.stride_h + kh) * row + kw;
              const float* drow = dyt + oh * planar_w_;
              for (int64_t ow0 = 0; ow0 < out_w_; ow0 += kLanes) {
                const Vec16 xv = load(xrow + ow0);
#pragma GCC unroll 16
                for (int o = 0; o < kOC; ++o) acc[o] += xv * load(drow + o * out_h_ * planar_w_ + ow0);
              }
            }
            for (int o = 0; o < kOC; ++o) dw[o * taps_ + kh * s_.kernel_w + kw] += acc[o];
          }
      }
    }
  }

  template <int kOC>
  void transpose_dy(const float* dyn, float* dyt) const {
    const NhwcToPlanar<kOC>& to_planar = nhwc_to_planar<kOC>();
    Vec16 planar[kOC];
    for (int64_t oh = 0; oh < out_h_; ++oh)
      for (int64_t ow0 = 0; ow0 < out_w_; ow0 += kLanes) {
        const int64_t pixels = std::min<int64_t>(kLanes, out_w_ - ow0);
        to_planar.load(dyn + (oh * out_w_ + ow0) * kOC, pixels * kOC, planar);
        for (int o = 0; o < kOC; ++o) store(dyt + (o * out_h_ + oh) * planar_w_ + ow0, planar[o]);
      }
  }

  static float lane_sum(Vec16 v) {
    float s = 0;
    for (int i = 0; i < kLanes; ++i) s += v[i];
    return s;
  }

  // OIHW [OC, 1, KH, KW] as [taps, OC].
  void set_weights(const float* w) {
    for (int64_t o = 0; o < s_.out_c; ++o)
      for (int64_t t = 0; t < taps_; ++t) w_[t * s_.out_c + o] = w[o * taps_ + t];
  }

  int64_t image_outputs() const { return out_h_ * out_w_ * s_.out_c; }

  ConvShape s_;
  Activation act_;
  PaddedImage image_;  // rows with 16 floats of slack for the last vector load of a row
  std::unique_ptr<ConvOp> data_gradient_;  // the few-taps op, for backward_data
  int64_t out_h_ = 0, out_w_ = 0, taps_ = 0;
  int64_t planar_w_ = 0, planar_floats_ = 0;  // OW rounded up to 16; one image's planar dy
  int threads_ = 1;
  // 64-byte aligned scratch: the dy row loads are aligned and the x rows start aligned (bwd_wts measured
  // 0.42 -> 0.32 ms in bench_conv against heap-aligned std::vector storage).
  Tensor padded_;     // [threads, padded image]
  Tensor planar_dy_;  // [threads, OC, OH, planar_w_]
  std::vector<float> w_;         // [taps, OC]
  std::vector<Vec16> dw_sums_;   // [threads, OC, taps]: 16 pixels' lanes, summed at the end
  std::vector<Vec16> db_sums_;   // [threads, OC]
  Tensor image_dpre_;            // [threads, one image's outputs] with an activation: its dpre
};

// The narrow-rows convolution with the layer's activation in it (see the file comment). With dx
// asked for (not a first layer), dpre goes through the caller's full-size scratch for backward_data.
class NarrowRowsActivatedConv final : public ActivatedConvOp {
 public:
  NarrowRowsActivatedConv(const ConvShape& s, Activation act)
      : conv_(s, act), act_(act), outputs_(s.batch * s.out_h() * s.out_w() * s.out_c) {}
  void forward(const void* x, const void* w, const float* b, void*, void* y) override { conv_.forward(x, w, b, y); }
  void backward(const void* x, const void*, const void* yv, const void* dyv, const void* w, void* dprev, float* dw,
                float* db, void* dx) override {
    const float* y = static_cast<const float*>(yv);
    const float* dy = static_cast<const float*>(dyv);
    if (!dx) return conv_.backward_weights_from_output(static_cast<const float*>(x), y, dy, dw, db);
    float* dpre = static_cast<float*>(dprev);
    if (act_ != Activation::none) activate_backward_from_output(act_, y, dy, dpre, outputs_);
    const void* grad = act_ != Activation::none ? static_cast<const void*>(dpre) : dyv;
    conv_.backward_weights(x, grad, dw, db);
    conv_.backward_data(grad, w, dx);
  }

 private:
  NarrowRowsConv conv_;
  Activation act_;
  int64_t outputs_;
};

}  // namespace

// perf/bench_conv (batch 64, one thread): lenet's 1 -> 6 at 5x5 forward 2.2x and weight gradient 1.5x
// oneDNN 2.6; 1 -> 16 at 3x3 forward 1.05x but weight gradient 0.35x (16 planar dy rows per tap sweep
// no longer stay in L1), so make_conv takes it up to kNarrowRowsMaxOutChannels.
bool prefers_narrow_rows(const ConvShape& s) {
  return NarrowRowsConv::runs(s) && s.out_c <= kNarrowRowsMaxOutChannels && !is_pointwise(s);
}

std::unique_ptr<ConvOp> make_narrow_rows_conv(const ConvShape& s) { return std::make_unique<NarrowRowsConv>(s); }

std::unique_ptr<ActivatedConvOp> make_narrow_rows_activated_conv(const ConvShape& s, Activation act) {
  return std::make_unique<NarrowRowsActivatedConv>(s, act);
}

}  // namespace scaletrain::cpu
