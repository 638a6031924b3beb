// SeparableConv2D's depthwise + pointwise pair and its activation fused, f32, a chunk of whole images
// at a time (about kChunkRows output pixels), so that what passes from one step to the next stays in
// per-thread chunk buffers in cache and only x, y, dy and dx go through memory:
//   forward:  mid = depthwise(x) (DepthwiseDirect), pre = mid * w_pw^T (oneDNN sgemm on w_pw transposed
//             once per call, its faster operand order), then pre + b
//             and y = act(pre) row by row from cache. Neither mid nor pre is kept: the op leaves the
//             caller's unwritten.
//   backward: mid = depthwise(x) again (a small fraction of the pointwise work; the padded images
//             stay for the depthwise weight gradient), dpre = act'(y) * dy from the output,
//             dw_pw += dpre^T * mid, db += column sums of dpre, dmid = dpre * w_pw, then depthwise dw
//             and dx from dmid.
// The composed ops (one full-size pass each) write and read mid, pre, dpre and dmid in memory as well.
// A max pooling that follows the layer can run inside (absorb_pool): forward pools each chunk's y while
// it is in cache and does not store y (the pooled output holds y wherever backward needs it: the cells
// the pooling took are the only ones with a gradient); backward forms dpre = act'(y) * dy at the pooled
// size and expands it into the chunk's pre buffer. So neither y nor the pooling's full-size gradient goes
// through memory. Each chunk has its own pooling op (the direct max pooling over the chunk's images),
// which keeps that chunk's argmax.
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "scaletrain/backend/cpu/activation_loops.hpp"
#include "scaletrain/backend/cpu/depthwise_direct.hpp"
#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/backend/cpu/transpose.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::cpu {
namespace {

// Output pixels per chunk: whole images, at least one.
constexpr int64_t kChunkRows = 784;

class FusedSeparableConv final : public SeparableConvOp {
 public:
  explicit FusedSeparableConv(const SeparableConvShape& s) : s_((s.validate(), s)), depthwise_(s.depthwise) {
    ST_CHECK(s.depthwise.dtype == DType::f32, "the fused separable convolution runs f32, not ", s.to_string());
    c_ = s.pointwise.in_c;
    f_ = s.pointwise.out_c;
    image_rows_ = s.pointwise.in_h * s.pointwise.in_w;
    chunk_images_ = std::max<int64_t>(1, kChunkRows / image_rows_);
    chunks_ = (s.depthwise.batch + chunk_images_ - 1) / chunk_images_;
    threads_ = std::max(1, omp_get_max_threads());
    padded_ = Tensor({threads_ * chunk_images_ * depthwise_.padded_floats()}, DType::f32,
                     "fused separable padded images");
    mid_ = Tensor({threads_ * chunk_floats(c_)}, DType::f32, "fused separable mid");
    dmid_ = Tensor({threads_ * chunk_floats(c_)}, DType::f32, "fused separable dmid");
    pre_ = Tensor({threads_ * chunk_floats(f_)}, DType::f32, "fused separable pre");
    w_pw_t_.resize(c_ * f_);
    dw_pw_.resize(threads_ * f_ * c_);
    db_.resize(threads_ * f_);
    for (int t = 0; t < threads_; ++t) dw_dw_.push_back(depthwise_.make_gradients());
  }

  void forward(const void* xv, const void* w_dw, const void* w_pw, const float* b, void*, void*, void* yv) override {
    depthwise_.set_weights(static_cast<const float*>(w_dw), nullptr);
    transpose_matrix(static_cast<const float*>(w_pw), f_, c_, w_pw_t_.data());
    const float* x = static_cast<const float*>(xv);
    float* y = static_cast<float*>(yv);
    for_each_chunk([&](int64_t n0, int64_t images, int th) {
      const float* mid = depthwise_chunk(x, n0, images, th);
      const int64_t rows = images * image_rows_;
      const bool pooled = !pools_.empty();
      float* yc = y + n0 * image_rows_ * f_;
      float* pre = s_.activation == Activation::none && !pooled ? yc : chunk(pre_, f_, th);
      check(dnnl_sgemm('N', 'N', rows, f_, c_, 1.0f, mid, c_, w_pw_t_.data(), f_, 0.0f, pre, f_), "forward");
      bias_and_activate(pre, b && s_.pointwise.bias ? b : nullptr, pooled ? pre : yc, rows);
      if (pooled) pools_[n0 / chunk_images_]->forward(pre, pooled_ + n0 * pooled_floats_, true);
    });
  }

  void backward(const void* xv, const void*, const void*, const void* yv, const void* dyv, const void* w_dw,
                const void* w_pw, void*, void*, float* dw_dw, float* dw_pw, float* db, void* dxv) override {
    ST_CHECK(!s_.pointwise.bias || db != nullptr, "separable convolution ", s_.to_string(),
             " has a bias but no bias gradient buffer was given");
    depthwise_.set_weights(static_cast<const float*>(w_dw), nullptr);
    const float* x = static_cast<const float*>(xv);
    const float* y = static_cast<const float*>(yv);
    const float* dy = static_cast<const float*>(dyv);
    float* dx = static_cast<float*>(dxv);
    std::fill(dw_pw_.begin(), dw_pw_.end(), 0.0f);
    std::fill(db_.begin(), db_.end(), 0.0f);
    for (auto& g : dw_dw_) g.clear();
    for_each_chunk([&](int64_t n0, int64_t images, int th) {
      const float* mid = depthwise_chunk(x, n0, images, th);
      const int64_t rows = images * image_rows_;
      const int64_t first = n0 * image_rows_ * f_;
      float* sums = db_.data() + th * f_;
      const float* dpre = pools_.empty() ? dpre_and_column_sums(y + first, dy + first, th, rows, sums)
                                         : pooled_dpre_and_column_sums(dy, n0, images, th, rows, sums);
      check(dnnl_sgemm('T', 'N', f_, c_, rows, 1.0f, dpre, f_, mid, c_, 1.0f, dw_pw_.data() + th * f_ * c_, c_),
            "pointwise backward_weights");
      float* dmid = chunk(dmid_, c_, th);
      check(dnnl_sgemm('N', 'N', rows, c_, f_, 1.0f, dpre, f_, static_cast<const float*>(w_pw), c_, 0.0f, dmid, c_),
            "pointwise backward_data");
      for (int64_t i = 0; i < images; ++i) {
        const float* dmid_n = dmid + i * depthwise_.out_floats();
        depthwise_.backward_weights_padded(padded(th, i), dmid_n, dw_dw_[th]);
        if (dx) depthwise_.backward_data(dmid_n, dx + (n0 + i) * depthwise_.in_floats(), padded(th, i));
      }
    });
    for (int th = 1; th < threads_; ++th) {
      for (int64_t i = 0; i < f_ * c_; ++i) dw_pw_[i] += dw_pw_[th * f_ * c_ + i];
      for (int64_t i = 0; i < f_; ++i) db_[i] += db_[th * f_ + i];
      dw_dw_[0].add(dw_dw_[th]);
    }
    std::copy(dw_pw_.begin(), dw_pw_.begin() + f_ * c_, dw_pw);
    if (db && s_.pointwise.bias) std::copy(db_.begin(), db_.begin() + f_, db);
    depthwise_.write_out(dw_dw_[0], dw_dw, nullptr);
  }

  bool absorb_pool(const PoolShape& pool, void* pooled) override {
    const ConvShape& pw = s_.pointwise;
    if (!absorbable_max_pool(pool, DType::f32, pw.batch, pw.in_h, pw.in_w, f_)) return false;
    pool.validate();
    pools_.clear();
    for (int64_t n0 = 0; n0 < pw.batch; n0 += chunk_images_) {
      PoolShape p = pool;
      p.batch = std::min(chunk_images_, pw.batch - n0);
      pools_.push_back(make_direct_max_pool(p));
    }
    pooled_ = static_cast<float*>(pooled);
    pooled_floats_ = pool.out_h() * pool.out_w() * pool.channels;
    pooled_dpre_ = Tensor({threads_ * chunk_images_ * pooled_floats_}, DType::f32, "fused separable pooled dpre");
    return true;
  }

 private:
  // f(first image, images, thread) for each chunk, chunks in parallel (oneDNN's sgemm then runs on the
  // calling thread: nested OpenMP is off).
  template <class F>
  void for_each_chunk(F&& f) {
    const int64_t batch = s_.depthwise.batch;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int64_t chunk = 0; chunk < chunks_; ++chunk) {
      const int64_t n0 = chunk * chunk_images_;
      f(n0, std::min(chunk_images_, batch - n0), omp_get_thread_num());
    }
  }
  int64_t chunk_floats(int64_t channels) const { return chunk_images_ * image_rows_ * channels; }
  float* chunk(Tensor& buffers, int64_t channels, int th) { return buffers.data<float>() + th * chunk_floats(channels); }
  // The padded buffer of the chunk's image i on thread th.
  float* padded(int th, int64_t i) {
    return padded_.data<float>() + (th * chunk_images_ + i) * depthwise_.padded_floats();
  }

  // The chunk's depthwise output, into the thread's mid buffer; the padded images stay in the
  // thread's padded buffers for backward_weights.
  const float* depthwise_chunk(const float* x, int64_t n0, int64_t images, int th) {
    float* mid = chunk(mid_, c_, th);
    for (int64_t i = 0; i < images; ++i) {
      depthwise_.pad_input(x + (n0 + i) * depthwise_.in_floats(), padded(th, i));
      depthwise_.forward_padded(padded(th, i), mid + i * depthwise_.out_floats());
    }
    return mid;
  }

  // With an absorbed pooling (dy: its output's gradient): the chunk's dpre = act'(y) * dy where the
  // pooling took y (y there is the pooled output), formed at the pooled size in the thread's buffer and
  // expanded by the pooling's backward into the pre buffer (zero elsewhere, as act'(y) * 0); then sums +=
  // its column sums, row by row as dpre_and_column_sums adds them.
  const float* pooled_dpre_and_column_sums(const float* dy, int64_t n0, int64_t images, int th, int64_t rows,
                                           float* sums) {
    float* pooled_dpre = pooled_dpre_.data<float>() + th * chunk_images_ * pooled_floats_;
    const int64_t at = n0 * pooled_floats_;
    activate_backward_from_output(s_.activation, pooled_ + at, dy + at, pooled_dpre, images * pooled_floats_);
    float* dpre = chunk(pre_, f_, th);
    pools_[n0 / chunk_images_]->backward(pooled_dpre, dpre);
    for (int64_t r = 0; r < rows; ++r) add_row(dpre + r * f_, sums);
    return dpre;
  }

  // sums += one row of F values.
  void add_row(const float* row, float* sums) const {
#pragma omp simd
    for (int64_t o = 0; o < f_; ++o) sums[o] += row[o];
  }

  // pre += b (null: none) and y = act(pre), row by row while the row is in L1.
  void bias_and_activate(float* pre, const float* b, float* y, int64_t rows) const {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = pre + r * f_;
      if (b) {
#pragma omp simd
        for (int64_t o = 0; o < f_; ++o) row[o] += b[o];
      }
      activate(s_.activation, row, y + r * f_, f_);
    }
  }

  // The chunk's dpre = act'(y) * dy (dy itself for none; otherwise in the thread's pre buffer) and
  // sums += its column sums (the bias gradient), row by row while the row is in L1.
  const float* dpre_and_column_sums(const float* y, const float* dy, int th, int64_t rows, float* sums) {
    float* buffer = s_.activation == Activation::none ? nullptr : chunk(pre_, f_, th);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = dy + r * f_;
      if (buffer) {
        activate_backward_from_output(s_.activation, y + r * f_, row, buffer + r * f_, f_);
        row = buffer + r * f_;
      }
      add_row(row, sums);
    }
    return buffer ? buffer : dy;
  }

  void check(dnnl_status_t st, const char* what) const {
    ST_CHECK(st == dnnl_success, "oneDNN sgemm failed in the ", what, " of separable convolution ", s_.to_string(),
             " (status ", static_cast<int>(st), ")");
  }

  SeparableConvShape s_;
  DepthwiseDirect depthwise_;
  int64_t c_ = 0, f_ = 0;          // channels in, filters out
  int64_t image_rows_ = 0;         // output pixels per image
  int64_t chunk_images_ = 0, chunks_ = 0;
  int threads_ = 1;
  // Per-thread buffers, 64-byte aligned (the vector loads' alignment): [threads, chunk images, padded image],
  // [threads, chunk rows, C] for mid and dmid, [threads, chunk rows, F] for pre and dpre.
  Tensor padded_, mid_, dmid_, pre_;
  std::vector<float> w_pw_t_;      // [C, F]: the pointwise weights transposed, for the forward
  std::vector<float> dw_pw_;       // [threads, F, C]
  std::vector<float> db_;          // [threads, F]
  std::vector<DepthwiseDirect::Gradients> dw_dw_;  // [threads]
  std::vector<std::unique_ptr<PoolOp>> pools_;     // an absorbed pooling: one per chunk, holding its argmax
  float* pooled_ = nullptr;                        // its output
  int64_t pooled_floats_ = 0;                      // its output floats per image
  Tensor pooled_dpre_;                             // [threads, chunk images, pooled image]
};

}  // namespace

// Images of at least kFusedSeparableMinImagePixels output pixels: the gain of keeping one image's
// intermediates in cache shrinks with the image, and is still there at 7x7 (perf/bench_conv).
bool prefers_fused_separable(const SeparableConvShape& s) {
  return s.depthwise.dtype == DType::f32 && s.pointwise.dtype == DType::f32 &&
         s.pointwise.in_h * s.pointwise.in_w >= kFusedSeparableMinImagePixels;
}

std::unique_ptr<SeparableConvOp> make_fused_separable_conv(const SeparableConvShape& s) {
  return std::make_unique<FusedSeparableConv>(s);
}

}  // namespace scaletrain::cpu
