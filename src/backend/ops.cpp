// Text forms of the operator shapes, for error messages and logs, and their validity checks.
#include "scaletrain/backend/ops.hpp"

#include <sstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain {

const char* filter_layout_name(FilterLayout layout) { return layout == FilterLayout::oihw ? "OIHW" : "OHWI"; }

void FilterLayoutChoice::take_filters_in(FilterLayout layout) {
  ST_CHECK(layout == FilterLayout::oihw, "a convolution computing in ", filter_layout_name(filter_layout()),
           " was handed filters in ", filter_layout_name(layout), ", which it does not take");
}

std::string ConvShape::to_string() const {
  std::ostringstream os;
  os << "conv{batch " << batch << ", in " << in_h << "x" << in_w << "x" << in_c << ", out_c " << out_c << ", kernel "
     << kernel_h << "x" << kernel_w << ", stride " << stride_h << "x" << stride_w << ", pad " << pad_top << ","
     << pad_left << "," << pad_bottom << "," << pad_right << ", groups " << groups << (bias ? ", bias" : "") << ", "
     << dtype_name(dtype) << "}";
  return os.str();
}

std::string InnerProductShape::to_string() const {
  std::ostringstream os;
  os << "inner_product{batch " << batch << ", in " << in_features << ", out " << out_features << (bias ? ", bias" : "")
     << ", " << dtype_name(dtype) << "}";
  return os.str();
}

std::string matmul_epilogue_name(MatmulEpilogue e) {
  switch (e) {
    case MatmulEpilogue::gelu: return "gelu";
    case MatmulEpilogue::bias_gradient: return "bias gradient";
    case MatmulEpilogue::none: break;
  }
  return "none";
}

std::string MatmulShape::to_string() const {
  std::ostringstream os;
  os << "matmul{batch " << batch << ", " << m << "x" << n << "x" << k << (trans_a ? ", A^T" : ", A")
     << (trans_b ? ", B^T" : ", B");
  if (lda > 0 || ldb > 0 || ldc > 0) os << ", ld " << lda_or() << "," << ldb_or() << "," << ldc_or();
  if (batch > 1) os << ", strides " << stride_a_or() << "," << stride_b_or() << "," << stride_c_or();
  if (alpha != 1.0f) os << ", alpha " << alpha;
  if (bias) os << ", bias";
  if (epilogue != MatmulEpilogue::none) os << ", " << matmul_epilogue_name(epilogue);
  os << ", " << dtype_name(dtype) << " -> " << dtype_name(out_dtype) << "}";
  return os.str();
}

void MatmulShape::validate() const {
  ST_CHECK(batch > 0 && m > 0 && n > 0 && k > 0, "invalid matmul ", to_string(), ": batch, m, n and k must be positive");
  ST_CHECK(lda_or() >= (trans_a ? m : k) && ldb_or() >= (trans_b ? k : n) && ldc_or() >= n, "invalid matmul ",
           to_string(), ": a leading dimension is shorter than its matrix's rows");
  ST_CHECK(lda >= 0 && ldb >= 0 && ldc >= 0 && stride_a >= 0 && stride_b >= 0 && stride_c >= 0, "invalid matmul ",
           to_string(), ": strides must not be negative");
  const auto is_float = [](DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; };
  ST_CHECK(is_float(dtype) && (out_dtype == dtype || out_dtype == DType::f32), "invalid matmul ", to_string(),
           ": the operands must be f32, bf16 or f16 and the output their type or f32");
  ST_CHECK(epilogue != MatmulEpilogue::bias_gradient || (batch == 1 && out_dtype == DType::f32), "invalid matmul ",
           to_string(), ": the bias gradient epilogue takes one matrix (batch 1) with an f32 output");
}

std::string PoolShape::to_string() const {
  std::ostringstream os;
  os << (kind == PoolKind::max ? "max_pool" : "avg_pool") << "{batch " << batch << ", in " << in_h << "x" << in_w << "x"
     << channels << ", kernel " << kernel_h << "x" << kernel_w << ", stride " << stride_h << "x" << stride_w << ", pad "
     << pad_top << "," << pad_left << "," << pad_bottom << "," << pad_right << (count_include_pad ? " counted" : "")
     << ", " << dtype_name(dtype) << "}";
  return os.str();
}

void ConvShape::validate() const {
  const ConvShape& s = *this;
  ST_CHECK(s.batch > 0 && s.in_c > 0 && s.out_c > 0 && s.in_h > 0 && s.in_w > 0 && s.kernel_h > 0 && s.kernel_w > 0 &&
               s.stride_h > 0 && s.stride_w > 0 && s.groups > 0,
           "invalid convolution ", s.to_string(),
           ": batch, sizes, channels, kernel, stride and groups must be positive");
  ST_CHECK(s.pad_top >= 0 && s.pad_left >= 0 && s.pad_bottom >= 0 && s.pad_right >= 0, "invalid convolution ",
           s.to_string(), ": padding must not be negative");
  ST_CHECK(s.in_c % s.groups == 0 && s.out_c % s.groups == 0, "invalid convolution ", s.to_string(),
           ": in_c and out_c must be divisible by groups");
  ST_CHECK(s.in_h + s.pad_top + s.pad_bottom >= s.kernel_h && s.in_w + s.pad_left + s.pad_right >= s.kernel_w,
           "invalid convolution ", s.to_string(), ": the kernel is larger than the padded input");
}

bool absorbable_max_pool(const PoolShape& pool, DType dtype, int64_t batch, int64_t h, int64_t w, int64_t channels) {
  const bool disjoint = pool.stride_h >= pool.kernel_h && pool.stride_w >= pool.kernel_w;
  return pool.kind == PoolKind::max && pool.dtype == dtype && pool.batch == batch && pool.in_h == h &&
         pool.in_w == w && pool.channels == channels && disjoint;
}

std::string SeparableConvShape::to_string() const {
  return "separable{depthwise " + depthwise.to_string() + ", pointwise " + pointwise.to_string() + ", activation " +
         activation_name(activation) + "}";
}

void SeparableConvShape::validate() const {
  depthwise.validate();
  pointwise.validate();
  const ConvShape &d = depthwise, &p = pointwise;
  ST_CHECK(d.groups == d.in_c && d.out_c == d.in_c && !d.bias, "invalid separable convolution ", to_string(),
           ": the first convolution must be depthwise (groups == in_c == out_c) without bias");
  ST_CHECK(p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.groups == 1 &&
               p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0,
           "invalid separable convolution ", to_string(), ": the second convolution must be pointwise (1x1)");
  ST_CHECK(p.batch == d.batch && p.in_h == d.out_h() && p.in_w == d.out_w() && p.in_c == d.out_c && p.dtype == d.dtype,
           "invalid separable convolution ", to_string(),
           ": the pointwise convolution must take the depthwise output (batch, size, channels, dtype)");
}

namespace {

// The ConvOp, then the activation's kernels between pre and y (what the layer did on its own), the
// backward taking the activation's gradient from y.
class ComposedActivatedConv final : public ActivatedConvOp {
 public:
  FilterLayout filter_layout() const override { return conv_->filter_layout(); }
  void take_filters_in(FilterLayout layout) override { conv_->take_filters_in(layout); }
  // conv_activates: conv's forward applies the activation itself (compose_post_activated_conv).
  ComposedActivatedConv(const ConvShape& s, Activation act, std::unique_ptr<ConvOp> conv, Stream& stream,
                        bool conv_activates, PoolAbsorption absorption = {})
      : shape_(s), act_(act), dtype_(s.dtype), stream_(stream), conv_(std::move(conv)),
        outputs_(s.batch * s.out_h() * s.out_w() * s.out_c), conv_activates_(conv_activates),
        absorption_(std::move(absorption)) {}
  void forward(const void* x, const void* w, const float* b, void* pre, void* y) override {
    if (conv_activates_) {
      conv_->forward(x, w, b, y);
    } else {
      conv_->forward(x, w, b, pre);
      if (act_ != Activation::none) launch_activation_forward(stream_, act_, dtype_, pre, y, outputs_);
    }
    if (pool_) pool_->forward(y, pooled_, true);
  }
  // The activation's gradient from y, where SELU's needs no exp. With a pooling absorbed, dy is its
  // output's gradient.
  void backward(const void* x, const void*, const void* y, const void* dy, const void* w, void* dpre, float* dw,
                float* db, void* dx) override {
    if (pool_) {
      launch_activation_backward_from_output(stream_, act_, dtype_, pooled_, dy, pooled_dpre_.device_raw(),
                                             pooled_dpre_.numel());
      pool_->backward(pooled_dpre_.device_raw(), dpre);
      dy = dpre;
    } else if (act_ != Activation::none) {
      launch_activation_backward_from_output(stream_, act_, dtype_, y, dy, dpre, outputs_);
      dy = dpre;
    }
    conv_->backward_weights(x, dy, dw, db);
    if (dx) conv_->backward_data(dy, w, dx);
  }
  // An absorbable max pooling of y (absorbable_max_pool), with an activation (dpre is the scratch the
  // expanded gradient goes to).
  bool absorb_pool(const PoolShape& pool, void* pooled) override {
    if (!absorption_.make_pool || act_ == Activation::none ||
        !absorbable_max_pool(pool, dtype_, shape_.batch, shape_.out_h(), shape_.out_w(), shape_.out_c))
      return false;
    pool.validate();
    pool_ = absorption_.make_pool(pool);
    pooled_ = pooled;
    pooled_dpre_ = absorption_.make_buffer({pool.batch * pool.out_h() * pool.out_w() * pool.channels}, dtype_,
                                           "absorbed pooling's activation gradient");
    return true;
  }

 private:
  ConvShape shape_;
  Activation act_;
  DType dtype_;
  Stream& stream_;
  std::unique_ptr<ConvOp> conv_;
  int64_t outputs_;
  bool conv_activates_;
  PoolAbsorption absorption_;
  std::unique_ptr<PoolOp> pool_;  // an absorbed pooling, its output, and the activation's gradient there
  void* pooled_ = nullptr;
  Tensor pooled_dpre_;
};

// The depthwise op, then the pointwise one with the activation (an ActivatedConvOp), through the
// full-size mid and dmid tensors (the order of the separate layers' calls).
class ComposedSeparableConv final : public SeparableConvOp {
 public:
  ComposedSeparableConv(std::unique_ptr<ConvOp> depthwise, std::unique_ptr<ActivatedConvOp> pointwise)
      : depthwise_(std::move(depthwise)), pointwise_(std::move(pointwise)) {}
  void forward(const void* x, const void* w_dw, const void* w_pw, const float* b, void* mid, void* pre,
               void* y) override {
    depthwise_->forward(x, w_dw, nullptr, mid);
    pointwise_->forward(mid, w_pw, b, pre, y);
  }
  void backward(const void* x, const void* mid, const void* pre, const void* y, const void* dy, const void* w_dw,
                const void* w_pw, void* dpre, void* dmid, float* dw_dw, float* dw_pw, float* db, void* dx) override {
    pointwise_->backward(mid, pre, y, dy, w_pw, dpre, dw_pw, db, dmid);
    depthwise_->backward_weights(x, dmid, dw_dw, nullptr);
    if (dx) depthwise_->backward_data(dmid, w_dw, dx);
  }
  bool absorb_pool(const PoolShape& pool, void* pooled) override { return pointwise_->absorb_pool(pool, pooled); }

 private:
  std::unique_ptr<ConvOp> depthwise_;
  std::unique_ptr<ActivatedConvOp> pointwise_;
};

}  // namespace

std::unique_ptr<ActivatedConvOp> compose_activated_conv(const ConvShape& shape, Activation activation,
                                                        std::unique_ptr<ConvOp> conv, Stream& stream) {
  return std::make_unique<ComposedActivatedConv>(shape, activation, std::move(conv), stream, false);
}

std::unique_ptr<ActivatedConvOp> compose_post_activated_conv(const ConvShape& shape, Activation activation,
                                                             std::unique_ptr<ConvOp> conv, Stream& stream,
                                                             PoolAbsorption absorption) {
  return std::make_unique<ComposedActivatedConv>(shape, activation, std::move(conv), stream, true,
                                                 std::move(absorption));
}

std::unique_ptr<SeparableConvOp> compose_separable_conv(const SeparableConvShape& shape,
                                                        std::unique_ptr<ConvOp> depthwise,
                                                        std::unique_ptr<ActivatedConvOp> pointwise) {
  shape.validate();
  return std::make_unique<ComposedSeparableConv>(std::move(depthwise), std::move(pointwise));
}

void PoolShape::validate() const {
  const PoolShape& s = *this;
  ST_CHECK(s.batch > 0 && s.channels > 0 && s.in_h > 0 && s.in_w > 0 && s.kernel_h > 0 && s.kernel_w > 0 &&
               s.stride_h > 0 && s.stride_w > 0,
           "invalid pooling ", s.to_string(), ": batch, sizes, channels, kernel and stride must be positive");
  ST_CHECK(s.pad_top >= 0 && s.pad_left >= 0 && s.pad_bottom >= 0 && s.pad_right >= 0, "invalid pooling ",
           s.to_string(), ": padding must not be negative");
  ST_CHECK(s.pad_top < s.kernel_h && s.pad_bottom < s.kernel_h && s.pad_left < s.kernel_w && s.pad_right < s.kernel_w,
           "invalid pooling ", s.to_string(), ": padding must be smaller than the kernel");
  ST_CHECK(s.in_h + s.pad_top + s.pad_bottom >= s.kernel_h && s.in_w + s.pad_left + s.pad_right >= s.kernel_w,
           "invalid pooling ", s.to_string(), ": the kernel is larger than the padded input");
}

std::string BatchNormShape::to_string() const {
  std::ostringstream os;
  os << "batch_norm{batch " << batch << ", spatial " << spatial << ", channels " << channels << ", "
     << activation_name(activation) << ", " << dtype_name(dtype) << "}";
  return os.str();
}

void BatchNormShape::validate() const {
  ST_CHECK(batch > 0 && spatial > 0 && channels > 0, "invalid batch normalization ", to_string(),
           ": batch, spatial size and channels must be positive");
  ST_CHECK(eps >= 0 && momentum >= 0 && momentum <= 1, "invalid batch normalization ", to_string(), ": eps ", eps,
           " must not be negative and momentum ", momentum, " must lie in [0, 1]");
  ST_CHECK(activation == Activation::none || activation == Activation::relu, "invalid batch normalization ",
           to_string(), ": only a ReLU can follow it");
}

}  // namespace scaletrain
