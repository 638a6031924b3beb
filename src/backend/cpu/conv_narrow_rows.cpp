// Direct f32 convolution of one input channel into few outputs (at most 16: a first layer on images of one channel),
// vectorized across 16 consecutive output pixels of a row instead of across channels, which such a
// layer has too few of to fill a vector. Each image is zero-padded once (rows with 16 floats of
// slack), so a tap's 16 inputs are one contiguous load broadcast-multiplied by each output channel's
// weight. Forward and the weight gradient run here; the data gradient (not needed by a first layer)
// is the few-taps op's. With the layer's activation (ActivatedDirectConv), the forward applies it
// to each tile of output while it is in L1, and the weight gradient takes the activation's gradient
// from y image by image, as it transposes dy: neither pre nor dpre goes to memory. A max pooling after
// the layer can run inside (absorb_pool): each image's y is pooled while in L1 and not stored, and the
// weight gradient expands each image's pooled gradient in L1 (as the fused separable op does).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
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

constexpr int64_t kMaxOutChannels = kLanes;
// The weight gradient's sweeps: at most 5 kernel columns and 20 register accumulators each.
constexpr int64_t kSweepMaxColumns = 5;
constexpr int kSweepMaxAccumulators = 20;

// A fixed permutation of kOC 16-float vectors into kOC others: lane l of output vector j is lane
// source(j, l).lane of input vector source(j, l).vector. With AVX-512, per output vector one
// two-source permute per pair of input vectors, merged under the lanes that pair supplies (36
// instructions for 6 vectors, where a copy lane by lane takes 96 extracts or inserts); without, lane
// by lane.
template <int kOC>
class VectorPermutation {
 public:
  struct Lane {
    int vector, lane;
  };
  template <class Source>
  explicit VectorPermutation(Source source) {
    for (int j = 0; j < kOC; ++j)
      for (int l = 0; l < kLanes; ++l) source_[j][l] = source(j, l);
    for (int j = 0; j < kOC; ++j)
      for (int q = 0; q < kPairs; ++q) {
        mask_[j][q] = 0;
        for (int l = 0; l < kLanes; ++l) {
          const Lane from = source_[j][l];
          const bool in_pair = from.vector / 2 == q;
          index_[j][q][l] = in_pair ? (from.vector - 2 * q) * kLanes + from.lane : 0;
          if (in_pair) mask_[j][q] |= static_cast<uint16_t>(1u << l);
        }
      }
  }
  Vec16 output(const Vec16* in, int j) const {
#ifdef __AVX512F__
    __m512 out = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int q = 0; q < kPairs; ++q) {
      const __m512 a = reinterpret_cast<__m512>(in[2 * q]);
      const __m512 b = reinterpret_cast<__m512>(in[std::min(2 * q + 1, kOC - 1)]);
      const __m512i index = _mm512_load_si512(index_[j][q]);
      out = _mm512_mask_mov_ps(out, mask_[j][q], _mm512_permutex2var_ps(a, index, b));
    }
    return reinterpret_cast<Vec16>(out);
#else
    Vec16 out;
    for (int l = 0; l < kLanes; ++l) out[l] = in[source_[j][l].vector][source_[j][l].lane];
    return out;
#endif
  }

 private:
  static constexpr int kPairs = (kOC + 1) / 2;
  Lane source_[kOC][kLanes];
  alignas(64) int32_t index_[kOC][kPairs][kLanes];
  uint16_t mask_[kOC][kPairs];
};

// 16 pixels of kOC channels: planar vectors (lane p of vector o: pixel p, channel o) to NHWC
// vectors (float i = 16j + l of the 16 pixels' NHWC values: pixel i / kOC, channel i % kOC), for
// the forward's output (in place of stores lane by lane); and back, for the weight gradient's dy (in
// place of a strided copy).
template <int kOC>
const VectorPermutation<kOC>& planar_to_nhwc() {
  static const VectorPermutation<kOC> table([](int j, int l) {
    const int i = kLanes * j + l;
    return typename VectorPermutation<kOC>::Lane{i % kOC, i / kOC};
  });
  return table;
}
template <int kOC>
const VectorPermutation<kOC>& nhwc_to_planar() {
  static const VectorPermutation<kOC> table([](int o, int p) {
    const int i = p * kOC + o;
    return typename VectorPermutation<kOC>::Lane{i / kLanes, i % kLanes};
  });
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
    weight_gradient(static_cast<const float*>(x), nullptr, static_cast<const float*>(dy), false, dw, db);
  }
  // The weight gradient from dy, the gradient of y = act(pre); with y null, dy is dpre itself.
  void backward_weights_from_output(const float* x, const float* y, const float* dy, float* dw, float* db) {
    weight_gradient(x, y, dy, false, dw, db);
  }

  // The max pooling after this op, run inside it (ActivatedConvOp::absorb_pool): an absorbable f32 max
  // pooling of y (absorbable_max_pool). One pooling op per image, holding that image's argmax.
  bool absorb_pool(const PoolShape& pool, void* pooled) {
    if (!absorbable_max_pool(pool, DType::f32, s_.batch, out_h_, out_w_, s_.out_c)) return false;
    pool.validate();
    PoolShape one = pool;
    one.batch = 1;
    pools_.clear();
    for (int64_t n = 0; n < s_.batch; ++n) pools_.push_back(make_direct_max_pool(one));
    pooled_ = static_cast<float*>(pooled);
    pooled_floats_ = pool.out_h() * pool.out_w() * pool.channels;
    image_y_ = Tensor({threads_ * image_outputs()}, DType::f32, "narrow-rows image y");
    pooled_dpre_ = Tensor({threads_ * pooled_floats_}, DType::f32, "narrow-rows pooled dpre");
    if (image_dpre_.numel() == 0)
      image_dpre_ = Tensor({threads_ * image_outputs()}, DType::f32, "narrow-rows image dpre");
    return true;
  }
  // With a pooling absorbed: the weight gradient from dpooled, the gradient of the pooled output.
  void backward_weights_from_pooled(const float* x, const float* dpooled, float* dw, float* db) {
    weight_gradient(x, nullptr, dpooled, true, dw, db);
  }
  // With a pooling absorbed: the full-size dpre of every image from dpooled (for backward_data).
  void expand_pooled_gradient(const float* dpooled, float* dpre) {
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t n = 0; n < s_.batch; ++n)
      std::copy_n(pooled_image_dpre(dpooled, n, omp_get_thread_num()), image_outputs(), dpre + n * image_outputs());
  }

 private:
  // dy: the gradient of pre (y null), of y (y given), or of the absorbed pooling's output (pooled).
  void weight_gradient(const float* x, const float* y, const float* dy, bool pooled, float* dw, float* db) {
    ST_CHECK(!s_.bias || db != nullptr, "convolution ", s_.to_string(),
             " has a bias but no bias gradient buffer was given");
    with_out_channels([&](auto oc) { backward_weights_images<decltype(oc)::value>(x, y, dy, pooled); });
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

  // f(std::integral_constant<int, n>{}) for n in 1 .. kMax: the kernels are compiled per count (output
  // channels, a sweep's columns and channels), so that their accumulators are registers.
  template <int kMax, class F, int k = 1>
  static void with_constant(int64_t n, F&& f) {
    if constexpr (k <= kMax) {
      if (n == k) return f(std::integral_constant<int, k>{});
      with_constant<kMax, F, k + 1>(n, std::forward<F>(f));
    }
  }
  template <class F>
  void with_out_channels(F&& f) {
    with_constant<kMaxOutChannels>(s_.out_c, std::forward<F>(f));
  }

  template <int kOC>
  void forward_images(const float* x, const float* b, float* y) {
    const VectorPermutation<kOC>& to_nhwc = planar_to_nhwc<kOC>();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t n = 0; n < s_.batch; ++n) {
      const int th = omp_get_thread_num();
      float* xp = padded_.data<float>() + th * image_.floats();
      float* yn = pools_.empty() ? y + n * image_outputs() : image_y_.data<float>() + th * image_outputs();
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
          float* yq = yn + (oh * out_w_ + ow0) * kOC;
          const int64_t pixels = std::min<int64_t>(kLanes, out_w_ - ow0);
          const int64_t floats = pixels * kOC;  // the first of 16 * kOC: a row's last tile may be shorter
          for (int j = 0; kLanes * j < floats; ++j)
            store_part(yq + kLanes * j, to_nhwc.output(acc, j), floats - kLanes * j);
          activate(act_, yq, yq, floats);  // the tile's outputs are still in L1
        }
      if (!pools_.empty()) pools_[n]->forward(yn, pooled_ + n * pooled_floats_, true);
    }
  }

  // Per image: dy (with y: the activation's gradient act'(y) * dy, formed in L2; pooled: expanded
  // from the pooled gradient) transposed to planar [OC, OH, OW rounded up to 16] (zero past each row's
  // end), then for each tap one sweep over the image with one register accumulator per output channel.
  template <int kOC>
  void backward_weights_images(const float* x, const float* y, const float* dy, bool pooled) {
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
#pragma omp for schedule(static)
      for (int64_t n = 0; n < s_.batch; ++n) {
        image_.pad(x + n * image_.image_floats(), xp);
        const float* dyn = pooled ? pooled_image_dpre(dy, n, th) : dy + n * image_outputs();
        if (dpre && !pooled) {
          activate_backward_from_output(act_, y + n * image_outputs(), dyn, dpre, image_outputs());
          dyn = dpre;
        }
        transpose_dy<kOC>(dyn, dyt);
        for (int o = 0; o < kOC; ++o)
          for (int64_t i = 0; i < out_h_ * planar_w_; i += kLanes) db[o] += load(dyt + o * out_h_ * planar_w_ + i);
        for (int64_t kh = 0; kh < s_.kernel_h; ++kh)
          for (int64_t kw0 = 0; kw0 < s_.kernel_w; kw0 += kSweepMaxColumns)
            with_constant<kSweepMaxColumns>(std::min(kSweepMaxColumns, s_.kernel_w - kw0), [&](auto columns) {
              constexpr int kW = decltype(columns)::value;
              for (int c0 = 0; c0 < kOC; c0 += sweep_channels(kW))
                with_constant<sweep_channels(kW)>(std::min(sweep_channels(kW), kOC - c0), [&](auto channels) {
                  weight_sweep<decltype(channels)::value, kW>(xp, dyt, kh, kw0, c0, dw);
                });
            });
      }
    }
  }

  // The weight gradient's taps (kh, kw0 .. kw0 + kW - 1) of channels c0 .. c0 + kG - 1 over one image:
  // kG * kW register accumulators, and per 16 output pixels kW loads of x shared by the kG channels
  // and kG loads of planar dy shared by the kW taps, in place of one x and kOC dy loads per tap.
  template <int kG, int kW>
  void weight_sweep(const float* xp, const float* dyt, int64_t kh, int64_t kw0, int c0, Vec16* dw) const {
    Vec16 acc[kG][kW] = {};
    const int64_t plane = out_h_ * planar_w_;
    for (int64_t oh = 0; oh < out_h_; ++oh) {
      const float* xrow = xp + (oh * s_.stride_h + kh) * image_.row_floats() + kw0;
      const float* drow = dyt + c0 * plane + oh * planar_w_;
      for (int64_t ow0 = 0; ow0 < out_w_; ow0 += kLanes) {
        Vec16 xv[kW];
        for (int k = 0; k < kW; ++k) {
          xv[k] = load(xrow + ow0 + k);
          keep_in_register(xv[k]);
        }
        for (int g = 0; g < kG; ++g) {
          const Vec16 d = load(drow + g * plane + ow0);
          for (int k = 0; k < kW; ++k) acc[g][k] += xv[k] * d;
        }
      }
    }
    for (int g = 0; g < kG; ++g)
      for (int k = 0; k < kW; ++k) dw[(c0 + g) * taps_ + kh * s_.kernel_w + kw0 + k] += acc[g][k];
  }

  // Image n's dpre from dpooled: act'(y) * dy where the pooling took y (y there is the pooled output),
  // formed at the pooled size and expanded by the image's pooling backward (zero elsewhere, as
  // act'(y) * 0), in thread th's buffers.
  const float* pooled_image_dpre(const float* dpooled, int64_t n, int th) {
    const int64_t at = n * pooled_floats_;
    float* pooled_dpre = pooled_dpre_.data<float>() + th * pooled_floats_;
    activate_backward_from_output(act_, pooled_ + at, dpooled + at, pooled_dpre, pooled_floats_);
    float* dpre = image_dpre_.data<float>() + th * image_outputs();
    pools_[static_cast<size_t>(n)]->backward(pooled_dpre, dpre);
    return dpre;
  }

  // A sweep's channel count for kW columns: at most kSweepMaxAccumulators accumulators and 8 channels.
  static constexpr int sweep_channels(int columns) { return std::min(8, kSweepMaxAccumulators / columns); }

  template <int kOC>
  void transpose_dy(const float* dyn, float* dyt) const {
    const VectorPermutation<kOC>& to_planar = nhwc_to_planar<kOC>();
    Vec16 nhwc[kOC];
    Vec16 planar[kOC];
    for (int64_t oh = 0; oh < out_h_; ++oh)
      for (int64_t ow0 = 0; ow0 < out_w_; ow0 += kLanes) {
        const int64_t pixels = std::min<int64_t>(kLanes, out_w_ - ow0);
        const int64_t floats = pixels * kOC;  // zero past them: the planar rows' padding
        const float* src = dyn + (oh * out_w_ + ow0) * kOC;
        for (int k = 0; k < kOC; ++k)
          nhwc[k] = kLanes * k < floats ? load_part(src + kLanes * k, floats - kLanes * k) : Vec16{};
        for (int o = 0; o < kOC; ++o) planar[o] = to_planar.output(nhwc, o);
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
  // 64-byte aligned scratch: the dy row loads are aligned and the x rows start aligned (std::vector's
  // heap alignment is 16 bytes).
  Tensor padded_;     // [threads, padded image]
  Tensor planar_dy_;  // [threads, OC, OH, planar_w_]
  std::vector<float> w_;         // [taps, OC]
  std::vector<Vec16> dw_sums_;   // [threads, OC, taps]: 16 pixels' lanes, summed at the end
  std::vector<Vec16> db_sums_;   // [threads, OC]
  Tensor image_dpre_;            // [threads, one image's outputs] with an activation or a pooling: its dpre
  // An absorbed max pooling: one op per image (its argmax), its output, and per-thread image buffers.
  std::vector<std::unique_ptr<PoolOp>> pools_;
  float* pooled_ = nullptr;
  int64_t pooled_floats_ = 0;  // pooled output floats per image
  Tensor image_y_;             // [threads, one image's outputs]: y, pooled while in L1
  Tensor pooled_dpre_;         // [threads, one image's pooled outputs]
};

}  // namespace

// Up to kNarrowRowsMaxOutChannels outputs: at 16 the planar dy rows of a tap sweep of the weight
// gradient no longer stay in L1 and oneDNN's weight gradient is the faster (perf/bench_conv).
bool prefers_narrow_rows(const ConvShape& s) {
  return NarrowRowsConv::runs(s) && s.out_c <= kNarrowRowsMaxOutChannels && !is_pointwise(s);
}

std::unique_ptr<ConvOp> make_narrow_rows_conv(const ConvShape& s) { return std::make_unique<NarrowRowsConv>(s); }

std::unique_ptr<ActivatedConvOp> make_narrow_rows_activated_conv(const ConvShape& s, Activation act) {
  return std::make_unique<ActivatedDirectConv<NarrowRowsConv>>(s, act);
}

}  // namespace scaletrain::cpu
