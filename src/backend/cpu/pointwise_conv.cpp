// Pointwise (1x1, stride 1, unpadded, ungrouped) convolution as an inner product over the
// N*H*W pixels of an NHWC tensor: y[NHW, OC] = x[NHW, IC] * w[OC, IC]^T + b. The activations are
// already in that layout and OIHW weights with H = W = 1 are exactly [OC, IC], so nothing is
// copied (bf16: the matmul inner product). oneDNN's 1x1 convolution primitive is far slower on the
// weight gradient of wide layers on small images, which is one GEMM on plain layouts.
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cpu {
namespace {

class PointwiseConv final : public ConvOp {
 public:
  PointwiseConv(OneDnnContextPtr ctx, const ConvShape& s, Activation act) {
    ST_CHECK(act == Activation::none || s.dtype == DType::bf16, "the f32 pointwise convolution (sgemm) takes no ",
             "activation into its forward: ", s.to_string());
    InnerProductShape ip;
    ip.dtype = s.dtype;
    ip.batch = s.batch * s.in_h * s.in_w;
    ip.in_features = s.in_c;
    ip.out_features = s.out_c;
    ip.bias = s.bias;
    ip_ = s.dtype == DType::f32 ? make_gemm_inner_product(ip) : make_matmul_inner_product(std::move(ctx), ip, act);
  }
  void forward(const void* x, const void* w, const float* b, void* y) override { ip_->forward(x, w, b, y); }
  void backward_data(const void* dy, const void* w, void* dx) override { ip_->backward_data(dy, w, dx); }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    ip_->backward_weights(x, dy, dw, db);
  }

 private:
  std::unique_ptr<InnerProductOp> ip_;
};

}  // namespace

bool is_pointwise(const ConvShape& s) {
  return s.kernel_h == 1 && s.kernel_w == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 &&
         s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0 && s.groups == 1;
}

std::unique_ptr<ConvOp> make_pointwise_conv(OneDnnContextPtr ctx, const ConvShape& s, Activation act) {
  ST_CHECK(is_pointwise(s), "not a pointwise convolution: ", s.to_string());
  return std::make_unique<PointwiseConv>(std::move(ctx), s, act);
}

}  // namespace scaletrain::cpu
