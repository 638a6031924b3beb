// Inner product (fully connected) forward, backward-data and backward-weights with oneDNN
// primitives created once per shape; activations `nc`, weights [out, in] (`oi`) at the user side,
// in f32 or bf16 (f32 bias and gradients of weights and bias).
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/check_dnnl.hpp"

namespace scaletrain::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class OneDnnInnerProduct final : public InnerProductOp {
 public:
  OneDnnInnerProduct(OneDnnContextPtr ctx, const InnerProductShape& s) : ctx_(std::move(ctx)), s_(s) {
    ST_CHECK(s.batch > 0 && s.in_features > 0 && s.out_features > 0, "invalid inner product ", s.to_string(),
             ": batch, in and out features must be positive");
    try {
      build();
    } catch (const dnnl::error& e) {
      ST_FAIL("oneDNN cannot create inner product ", s.to_string(), ": ", e.what());
    }
  }

  void forward(const void* x, const void* w, const float* b, void* y) override {
    prims_.forward(ctx_->stream, x, w, b, y);
  }

  void backward_data(const void* dy, const void* w, void* dx) override {
    prims_.backward_data(ctx_->stream, dy, w, dx);
  }

  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    ST_CHECK(!s_.bias || db != nullptr, "inner product ", s_.to_string(),
             " has a bias but no bias gradient buffer was given");
    prims_.backward_weights(ctx_->stream, x, dy, dw, db);
  }

 private:
  void build() {
    const InnerProductShape& s = s_;
    auto& eng = ctx_->engine;
    const dt type = onednn_type(s.dtype);
    const memory::desc src_md({s.batch, s.in_features}, type, tag::nc);
    const memory::desc dst_md({s.batch, s.out_features}, type, tag::nc);
    const memory::desc w_user({s.out_features, s.in_features}, type, tag::oi);
    const memory::desc w_any({s.out_features, s.in_features}, type, tag::any);
    const memory::desc dw_user({s.out_features, s.in_features}, dt::f32, tag::oi);
    const memory::desc dw_any({s.out_features, s.in_features}, dt::f32, tag::any);
    const memory::desc b_md = s.bias ? memory::desc({s.out_features}, dt::f32, tag::x) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    using dnnl::prop_kind;
    dnnl::inner_product_forward::desc fd(prop_kind::forward_training, src_md, w_any, b_md, dst_md);
    dnnl::inner_product_forward::primitive_desc fwd_pd(fd, attr, eng);
    dnnl::inner_product_backward_data::desc bd(src_md, w_any, dst_md);
    dnnl::inner_product_backward_data::primitive_desc bwd_data_pd(bd, attr, eng, fwd_pd);
    dnnl::inner_product_backward_weights::desc wd(src_md, dw_any, b_md, dst_md);
    dnnl::inner_product_backward_weights::primitive_desc bwd_w_pd(wd, attr, eng, fwd_pd);
    prims_ = WeightedPrimitives(eng, src_md, dst_md, w_user, dw_user, b_md, fwd_pd, bwd_data_pd, bwd_w_pd);
  }

  OneDnnContextPtr ctx_;
  InnerProductShape s_;
  WeightedPrimitives prims_;
};

}  // namespace

std::unique_ptr<InnerProductOp> make_onednn_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s) {
  return std::make_unique<OneDnnInnerProduct>(std::move(ctx), s);
}

}  // namespace scaletrain::cpu
