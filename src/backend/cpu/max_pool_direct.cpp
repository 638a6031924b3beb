// Max pooling on NHWC as plain loops that keep an argmax per output element, used for channel
// counts that are not a multiple of 16 (one AVX-512 vector). Measured with ONEDNN_VERBOSE on lenet
// (batch 128, one core): oneDNN 2.6's jit backward for the 28x28x6 max pooling took 0.8-1.5 ms per
// call against 0.13 ms for its forward; here backward is a scatter of dy through the saved argmax.
// Templated over the storage type (f32, bf16, f16).
#include <algorithm>
#include <limits>
#include <vector>

#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"

namespace scaletrain::cpu {
namespace {

// T: the storage type (float, bf16, f16); comparisons in float, outputs copied from the input.
template <class T>
class DirectMaxPool final : public PoolOp {
 public:
  explicit DirectMaxPool(const PoolShape& s) : s_(s) {
    s.validate();
    ST_CHECK(s.kind == PoolKind::max, "DirectMaxPool: ", s.to_string(), " is not a max pooling");
    ST_CHECK(s.in_h * s.in_w * s.channels <= std::numeric_limits<int32_t>::max(), "max pooling ", s.to_string(),
             ": a sample has more elements than an int32 argmax can index");
    argmax_.resize(static_cast<size_t>(s.batch * s.out_h() * s.out_w() * s.channels));
  }

  void forward(const void* x, void* y, bool training) override {
    // Inference leaves the argmax of the last training forward in place, as oneDNN's workspace.
    run(static_cast<const T*>(x), static_cast<T*>(y), training ? argmax_.data() : nullptr);
    have_argmax_ = have_argmax_ || training;
  }

  void backward(const void* dy_v, void* dx_v) override {
    const T* dy = static_cast<const T*>(dy_v);
    T* dx = static_cast<T*>(dx_v);
    ST_CHECK(have_argmax_, "max pooling ", s_.to_string(), ": backward called before a forward with training = true");
    const int64_t in_plane = s_.in_h * s_.in_w * s_.channels, out_plane = s_.out_h() * s_.out_w() * s_.channels;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s_.batch; ++n) {
      T* dxn = dx + n * in_plane;
      std::fill(dxn, dxn + in_plane, from_float<T>(0.0f));
      const T* dyn = dy + n * out_plane;
      const int32_t* am = argmax_.data() + n * out_plane;
      for (int64_t o = 0; o < out_plane; ++o) dxn[am[o]] = from_float<T>(to_float(dxn[am[o]]) + to_float(dyn[o]));
    }
  }

 private:
  // For each output pixel the window is scanned in blocks of kB channels whose running maxima stay
  // in registers (kB = the channel count for the small counts this op is tuned for, 1 for any
  // other); only in-bounds cells take part, so padding is never the maximum. argmax is null for
  // inference.
  template <int kB>
  void run_blocks(const T* x, T* y, int32_t* argmax) {
    const int64_t H = s_.in_h, W = s_.in_w, C = s_.channels, OH = s_.out_h(), OW = s_.out_w();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s_.batch; ++n) {
      const T* xn = x + n * H * W * C;
      for (int64_t oh = 0; oh < OH; ++oh) {
        const int64_t h0 = std::max<int64_t>(oh * s_.stride_h - s_.pad_top, 0);
        const int64_t h1 = std::min<int64_t>(oh * s_.stride_h - s_.pad_top + s_.kernel_h, H);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = std::max<int64_t>(ow * s_.stride_w - s_.pad_left, 0);
          const int64_t w1 = std::min<int64_t>(ow * s_.stride_w - s_.pad_left + s_.kernel_w, W);
          const int64_t o = ((n * OH + oh) * OW + ow) * C;
          for (int64_t c0 = 0; c0 < C; c0 += kB) {
            float best[kB];
            int32_t best_i[kB];
            const int32_t first = static_cast<int32_t>((h0 * W + w0) * C + c0);
            for (int c = 0; c < kB; ++c) {
              best[c] = to_float(xn[first + c]);
              best_i[c] = first + c;
            }
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) {
                const int32_t base = static_cast<int32_t>((h * W + w) * C + c0);
                for (int c = 0; c < kB; ++c) {  // selects, not branches: random data mispredicts
                  const float v = to_float(xn[base + c]);
                  const bool greater = v > best[c];
                  best[c] = greater ? v : best[c];
                  best_i[c] = greater ? base + c : best_i[c];
                }
              }
            for (int c = 0; c < kB; ++c) {
              y[o + c0 + c] = xn[best_i[c]];
              if (argmax) argmax[o + c0 + c] = best_i[c];
            }
          }
        }
      }
    }
  }

  void run(const T* x, T* y, int32_t* argmax) {
    switch (s_.channels) {
      case 2:
        return run_blocks<2>(x, y, argmax);
      case 3:
        return run_blocks<3>(x, y, argmax);
      case 4:
        return run_blocks<4>(x, y, argmax);
      case 6:
        return run_blocks<6>(x, y, argmax);
      case 8:
        return run_blocks<8>(x, y, argmax);
      default:
        return run_blocks<1>(x, y, argmax);
    }
  }

  PoolShape s_;
  std::vector<int32_t> argmax_;  // per output element: the input element's index within its sample
  bool have_argmax_ = false;
};

}  // namespace

std::unique_ptr<PoolOp> make_direct_max_pool(const PoolShape& s) {
  switch (s.dtype) {
    case DType::f32: return std::make_unique<DirectMaxPool<float>>(s);
    case DType::bf16: return std::make_unique<DirectMaxPool<bf16>>(s);
    case DType::f16: return std::make_unique<DirectMaxPool<f16>>(s);
    default: break;
  }
  ST_FAIL("max pooling ", s.to_string(), ": no direct kernel for ", dtype_name(s.dtype));
}

}  // namespace scaletrain::cpu
