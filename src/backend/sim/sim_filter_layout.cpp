// An activated convolution computing in OHWI filters on sim (backend/sim/sim_filter_layout.hpp).
#include "scaletrain/backend/sim/sim_filter_layout.hpp"

#include <utility>

#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/conv_layout.hpp"

namespace scaletrain::sim {
namespace {

class OhwiFilterConv final : public ActivatedConvOp {
 public:
  OhwiFilterConv(std::unique_ptr<ActivatedConvOp> op, const ConvShape& s)
      : op_(std::move(op)),
        dtype_(s.dtype),
        geometry_{s.out_c, s.in_c / s.groups, s.kernel_h, s.kernel_w},
        oihw_({s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w}, s.dtype, "sim conv filters (OIHW)") {
    set_implementation(op_->implementation());
  }
  FilterLayout filter_layout() const override { return FilterLayout::ohwi; }
  void take_filters_in(FilterLayout layout) override {
    if (layout != FilterLayout::ohwi) ActivatedConvOp::take_filters_in(layout);
    ohwi_ = layout == FilterLayout::ohwi;
  }
  void forward(const void* x, const void* w, const float* b, void* pre, void* y) override {
    reordered_from_ = nullptr;  // the filters may have changed since the last call
    op_->forward(x, oihw(w), b, pre, y);
  }
  // The forward's reorder serves its backward: the filters do not change between the two (the update
  // comes after backward).
  void backward(const void* x, const void* pre, const void* y, const void* dy, const void* w, void* dpre, float* dw,
                float* db, void* dx) override {
    op_->backward(x, pre, y, dy, oihw(w), dpre, dw, db, dx);
  }
  bool absorb_pool(const PoolShape& pool, void* pooled) override { return op_->absorb_pool(pool, pooled); }

 private:
  // The host operator's OIHW filters: w itself, or w's OHWI values put back in place (rows of in_c
  // values, each spread kh * kw apart).
  const void* oihw(const void* w) {
    if (!ohwi_) return w;
    if (w == reordered_from_) return oihw_.raw();
    const kernels::FilterGeometry g = geometry_;
    const int64_t taps = g.kh * g.kw, rows = g.out_c * taps;
    visit_float_type(dtype_, [&](auto t) {
      using T = decltype(t);
      const T* src = static_cast<const T*>(w);
      T* dst = oihw_.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        T* d = dst + (r / taps) * g.in_c * taps + r % taps;
        const T* s = src + r * g.in_c;
        for (int64_t c = 0; c < g.in_c; ++c) d[c * taps] = s[c];
      }
    });
    reordered_from_ = w;
    return oihw_.raw();
  }

  std::unique_ptr<ActivatedConvOp> op_;
  DType dtype_;
  kernels::FilterGeometry geometry_;
  Tensor oihw_;  // host memory, used inside the op's call on its stream's worker
  bool ohwi_ = false;
  const void* reordered_from_ = nullptr;  // the forward's filters, which oihw_ holds
};

}  // namespace

std::unique_ptr<ActivatedConvOp> with_ohwi_filters(std::unique_ptr<ActivatedConvOp> host_op, const ConvShape& shape) {
  return std::make_unique<OhwiFilterConv>(std::move(host_op), shape);
}

}  // namespace scaletrain::sim
