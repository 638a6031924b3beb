// A convolution whose backward-data pass runs on direct f32 loops while its forward and weight
// gradient stay on the wrapped op (oneDNN's). oneDNN's backward-data vectorizes over input channels,
// which a layer of few input channels leaves mostly empty, while its forward and weight gradient
// vectorize over output channels and keep their vectors full. Here, per output pixel, the
// columns dcol[taps] = dy[pixel, :] * w[:, taps] are summed in registers (vectors across the taps,
// ordered (kh, kw, ic) as NHWC x is), four pixels by a group of at most kMaxGroup tap vectors at a
// time so that each weight vector loaded serves four pixels, and added onto the pixel's window of a
// zero-padded dx image, KH runs of KW * IC contiguous floats; the image is then cropped into dx.
#include <omp.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/backend/cpu/padded_image.hpp"
#include "scaletrain/backend/cpu/vec16.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cpu {
namespace {

constexpr int64_t kMaxTapVectors = kDirectBackwardDataMaxTaps / kLanes;
constexpr int kMaxGroup = 5;  // tap vectors per register tile (4 pixels x 5 = 20 accumulators)
constexpr int kTilePixels = 4;

class DirectBackwardDataConv final : public ConvOp {
 public:
  DirectBackwardDataConv(std::unique_ptr<ConvOp> base, const ConvShape& s)
      : base_(std::move(base)), s_(s), image_(s) {
    s.validate();
    ST_CHECK(s.dtype == DType::f32 && s.groups == 1 && taps() <= kDirectBackwardDataMaxTaps,
             "the direct backward-data convolution runs ungrouped f32 with at most ", kDirectBackwardDataMaxTaps,
             " taps, not ", s.to_string());
    out_pixels_ = s.out_h() * s.out_w();
    const int64_t tap_vectors = (taps() + kLanes - 1) / kLanes;
    groups_ = (tap_vectors + kMaxGroup - 1) / kMaxGroup;
    group_ = (tap_vectors + groups_ - 1) / groups_;
    window_ = image_.window_offsets(s);
    threads_ = std::max(1, omp_get_max_threads());
    padded_.resize(threads_ * image_.floats());
    wk_.resize(s.out_c * groups_ * group_);
  }

  void forward(const void* x, const void* w, const float* b, void* y) override { base_->forward(x, w, b, y); }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    base_->backward_weights(x, dy, dw, db);
  }

  void backward_data(const void* dyv, const void* wv, void* dxv) override {
    transpose_weights(static_cast<const float*>(wv));
    const float* dy = static_cast<const float*>(dyv);
    float* dx = static_cast<float*>(dxv);
    dispatch(std::make_integer_sequence<int, kMaxGroup + 1>{}, dy, dx);
  }

 private:
  int64_t taps() const { return s_.in_c * s_.kernel_h * s_.kernel_w; }

  // backward_images<kG> for kG = group_ (1..kMaxGroup), so that the sums stay in registers.
  template <int... kG>
  void dispatch(std::integer_sequence<int, kG...>, const float* dy, float* dx) {
    ((kG == group_ ? backward_images<kG>(dy, dx) : void()), ...);
  }

  // Images in parallel; an image's pixels kTilePixels at a time (the rest one by one).
  template <int kG>
  void backward_images(const float* dy, float* dx) {
    if constexpr (kG > 0) {
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (int64_t n = 0; n < s_.batch; ++n) {
        float* dxp = padded_.data() + omp_get_thread_num() * image_.floats();
        std::fill(dxp, dxp + image_.floats(), 0.0f);
        const float* dyn = dy + n * out_pixels_ * s_.out_c;
        int64_t q = 0;
        for (; q + kTilePixels <= out_pixels_; q += kTilePixels) add_columns<kTilePixels, kG>(dyn, q, dxp);
        for (; q < out_pixels_; ++q) add_columns<1, kG>(dyn, q, dxp);
        image_.crop(dxp, dx + n * image_.image_floats());
      }
    }
  }

  // For pixels q0 .. q0 + kP - 1: dcol = sum over oc of dy[pixel, oc] * w[oc, :], group by group of kG
  // tap vectors, then added onto each pixel's window.
  template <int kP, int kG>
  void add_columns(const float* dyn, int64_t q0, float* dxp) const {
    float dcol[kP][kMaxTapVectors * kLanes];
    const int64_t oc = s_.out_c, row = groups_ * kG;
    for (int64_t g = 0; g < groups_; ++g) {
      Vec16 acc[kP][kG] = {};
      for (int64_t o = 0; o < oc; ++o) {
        Vec16 w[kG];
        for (int v = 0; v < kG; ++v) {
          w[v] = wk_[o * row + g * kG + v];
#ifdef __AVX512F__
          // Keeps w[v] in a register for the kP pixels: GCC would otherwise fold the load into each
          // pixel's FMA, reloading it kP times.
          asm("" : "+v"(w[v]));
#endif
        }
#pragma GCC unroll 4
        for (int p = 0; p < kP; ++p) {
          const float d = dyn[(q0 + p) * oc + o];
#pragma GCC unroll 5
          for (int v = 0; v < kG; ++v) acc[p][v] += d * w[v];
        }
      }
      for (int p = 0; p < kP; ++p)
        for (int v = 0; v < kG; ++v) store(dcol[p] + (g * kG + v) * kLanes, acc[p][v]);
    }
    for (int p = 0; p < kP; ++p) add_window(dcol[p], dxp + window_[q0 + p]);
  }

  // The window at xw (its top-left in the padded image) += dcol: KH runs of KW * IC floats.
  void add_window(const float* dcol, float* xw) const {
    const int64_t run = s_.kernel_w * s_.in_c, stride = image_.row_floats();
    for (int64_t kh = 0; kh < s_.kernel_h; ++kh) {
      float* dst = xw + kh * stride;
      const float* src = dcol + kh * run;
      for (int64_t i = 0; i < run; i += kLanes) {
        const int64_t n = run - i;
        store_part(dst + i, load_part(dst + i, n) + load_part(src + i, n), n);
      }
    }
  }

  // OIHW weights [OC, IC, KH, KW] as [OC, groups x group tap vectors] with taps ordered (kh, kw, ic),
  // zero beyond K.
  void transpose_weights(const float* w) {
    std::fill(wk_.begin(), wk_.end(), Vec16{});
    const int64_t row = groups_ * group_;
    for (int64_t o = 0; o < s_.out_c; ++o)
      for (int64_t j = 0; j < taps(); ++j) {
        const int64_t t = nhwc_tap_of_oihw(s_, j);
        wk_[o * row + t / kLanes][t % kLanes] = w[o * taps() + j];
      }
  }

  std::unique_ptr<ConvOp> base_;
  ConvShape s_;
  PaddedImage image_;
  int64_t out_pixels_ = 0;
  int64_t groups_ = 0, group_ = 0;  // the K taps' 16-float vectors as groups_ register tiles of group_
  int threads_ = 1;
  std::vector<int64_t> window_;  // [OH * OW]: offset of each output pixel's window in the padded image
  std::vector<float> padded_;    // [threads, padded image]: dx before cropping
  std::vector<Vec16> wk_;        // [OC, groups_ * group_ tap vectors]
};

}  // namespace

// Few input channels (at most kDirectBackwardDataMaxInChannels): from 16 on, oneDNN's kernel has whole
// vectors of input channels and is the faster (perf/bench_conv compares them).
bool prefers_direct_backward_data(const ConvShape& s) {
  return s.dtype == DType::f32 && s.groups == 1 && !is_pointwise(s) && s.in_c <= kDirectBackwardDataMaxInChannels &&
         s.in_c * s.kernel_h * s.kernel_w <= kDirectBackwardDataMaxTaps;
}

std::unique_ptr<ConvOp> make_direct_backward_data_conv(std::unique_ptr<ConvOp> base, const ConvShape& s) {
  return std::make_unique<DirectBackwardDataConv>(std::move(base), s);
}

}  // namespace scaletrain::cpu
