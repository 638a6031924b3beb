// Inner product (fully connected) forward, backward-data and backward-weights with oneDNN
// primitives created once per shape; activations `nc`, weights [out, in] (`oi`) at the user side.
#include <algorithm>
#include <unordered_map>

#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/check_dnnl.hpp"

namespace scaletrain::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using Args = std::unordered_map<int, memory>;

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

  void forward(const float* x, const float* w, const float* b, float* y) override {
    src_.set_data_handle(const_cast<float*>(x));
    dst_.set_data_handle(y);
    if (s_.bias) bias_.set_data_handle(const_cast<float*>(b));
    w_fwd_.to_internal(ctx_->stream, w);
    fwd_call_.run(ctx_->stream);
    ctx_->stream.wait();
  }

  void backward_data(const float* dy, const float* w, float* dx) override {
    dst_.set_data_handle(const_cast<float*>(dy));
    src_.set_data_handle(dx);
    w_bwd_data_.to_internal(ctx_->stream, w);
    bwd_data_call_.run(ctx_->stream);
    ctx_->stream.wait();
  }

  void backward_weights(const float* x, const float* dy, float* dw, float* db) override {
    src_.set_data_handle(const_cast<float*>(x));
    dst_.set_data_handle(const_cast<float*>(dy));
    if (s_.bias) {
      ST_CHECK(db != nullptr, "inner product ", s_.to_string(), " has a bias but no bias gradient buffer was given");
      bias_.set_data_handle(db);
    }
    dw_.bind_user(dw);
    bwd_w_call_.run(ctx_->stream);
    dw_.to_user(ctx_->stream);
    ctx_->stream.wait();
  }

 private:
  void build() {
    const InnerProductShape& s = s_;
    auto& eng = ctx_->engine;
    const memory::desc src_md({s.batch, s.in_features}, dt::f32, tag::nc);
    const memory::desc dst_md({s.batch, s.out_features}, dt::f32, tag::nc);
    const memory::desc w_user({s.out_features, s.in_features}, dt::f32, tag::oi);
    const memory::desc w_any({s.out_features, s.in_features}, dt::f32, tag::any);
    const memory::desc b_md = s.bias ? memory::desc({s.out_features}, dt::f32, tag::x) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    using dnnl::prop_kind;
    dnnl::inner_product_forward::desc fd(prop_kind::forward_training, src_md, w_any, b_md, dst_md);
    dnnl::inner_product_forward::primitive_desc fwd_pd(fd, attr, eng);
    dnnl::inner_product_backward_data::desc bd(src_md, w_any, dst_md);
    dnnl::inner_product_backward_data::primitive_desc bwd_data_pd(bd, attr, eng, fwd_pd);
    dnnl::inner_product_backward_weights::desc wd(src_md, w_any, b_md, dst_md);
    dnnl::inner_product_backward_weights::primitive_desc bwd_w_pd(wd, attr, eng, fwd_pd);
    const dnnl::inner_product_forward fwd(fwd_pd);
    const dnnl::inner_product_backward_data bwd_data(bwd_data_pd);
    const dnnl::inner_product_backward_weights bwd_w(bwd_w_pd);

    w_fwd_ = LayoutBridge(w_user, fwd_pd.weights_desc(), eng);
    w_bwd_data_ = LayoutBridge(w_user, bwd_data_pd.weights_desc(), eng);
    dw_ = LayoutBridge(w_user, bwd_w_pd.diff_weights_desc(), eng);
    src_ = unbound_memory(src_md, eng);
    dst_ = unbound_memory(dst_md, eng);
    if (s.bias) bias_ = unbound_memory(b_md, eng);

    const size_t scratch = std::max({fwd_pd.scratchpad_desc().get_size(), bwd_data_pd.scratchpad_desc().get_size(),
                                     bwd_w_pd.scratchpad_desc().get_size()});
    scratch_storage_ = host_bytes(scratch);
    Args fwd_args{{DNNL_ARG_SRC, src_},
                  {DNNL_ARG_WEIGHTS, w_fwd_.internal()},
                  {DNNL_ARG_DST, dst_},
                  {DNNL_ARG_SCRATCHPAD, memory(fwd_pd.scratchpad_desc(), eng, scratch_storage_.raw())}};
    Args bwd_data_args{{DNNL_ARG_DIFF_DST, dst_},
                       {DNNL_ARG_WEIGHTS, w_bwd_data_.internal()},
                       {DNNL_ARG_DIFF_SRC, src_},
                       {DNNL_ARG_SCRATCHPAD, memory(bwd_data_pd.scratchpad_desc(), eng, scratch_storage_.raw())}};
    Args bwd_w_args{{DNNL_ARG_SRC, src_},
                    {DNNL_ARG_DIFF_DST, dst_},
                    {DNNL_ARG_DIFF_WEIGHTS, dw_.internal()},
                    {DNNL_ARG_SCRATCHPAD, memory(bwd_w_pd.scratchpad_desc(), eng, scratch_storage_.raw())}};
    if (s.bias) {
      fwd_args[DNNL_ARG_BIAS] = bias_;
      bwd_w_args[DNNL_ARG_DIFF_BIAS] = bias_;
    }
    fwd_call_ = PrimitiveCall(fwd, fwd_args);
    bwd_data_call_ = PrimitiveCall(bwd_data, bwd_data_args);
    bwd_w_call_ = PrimitiveCall(bwd_w, bwd_w_args);
  }

  OneDnnContextPtr ctx_;
  InnerProductShape s_;
  LayoutBridge w_fwd_, w_bwd_data_, dw_;
  memory src_, dst_, bias_;  // rebound to the caller's buffers on every call
  Tensor scratch_storage_;
  PrimitiveCall fwd_call_, bwd_data_call_, bwd_w_call_;
};

}  // namespace

std::unique_ptr<InnerProductOp> make_onednn_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s) {
  return std::make_unique<OneDnnInnerProduct>(std::move(ctx), s);
}

}  // namespace scaletrain::cpu
