// Convolution (grouped and depthwise included) forward, backward-data and backward-weights with
// oneDNN primitives created once per shape; activations NHWC, weights OIHW / GOIHW at the user side,
// in f32 or bf16 (f32 bias, weight and bias gradients; f32 accumulation). With an activation, the
// forward applies it as a post-op (the backward passes take the activation's gradient from the caller).
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/check_dnnl.hpp"

namespace scaletrain::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class OneDnnConv final : public ConvOp {
 public:
  OneDnnConv(OneDnnContextPtr ctx, const ConvShape& s, Activation act) : ctx_(std::move(ctx)), s_(s), act_(act) {
    s.validate();
    try {
      build();
    } catch (const dnnl::error& e) {
      ST_FAIL("oneDNN cannot create convolution ", s.to_string(), ": ", e.what());
    }
  }

  void forward(const void* x, const void* w, const float* b, void* y) override {
    prims_.forward(ctx_->stream, x, w, b, y);
  }

  void backward_data(const void* dy, const void* w, void* dx) override {
    prims_.backward_data(ctx_->stream, dy, w, dx);
  }

  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    ST_CHECK(!s_.bias || db != nullptr, "convolution ", s_.to_string(),
             " has a bias but no bias gradient buffer was given");
    prims_.backward_weights(ctx_->stream, x, dy, dw, db);
  }

 private:
  void build() {
    const ConvShape& s = s_;
    auto& eng = ctx_->engine;
    const memory::dims src{s.batch, s.in_c, s.in_h, s.in_w};
    const memory::dims dst{s.batch, s.out_c, s.out_h(), s.out_w()};
    const memory::dims strides{s.stride_h, s.stride_w};
    const memory::dims pad_l{s.pad_top, s.pad_left}, pad_r{s.pad_bottom, s.pad_right};
    memory::dims w;
    tag wtag;
    if (s.groups == 1) {
      w = {s.out_c, s.in_c, s.kernel_h, s.kernel_w};
      wtag = tag::oihw;
    } else {
      w = {s.groups, s.out_c / s.groups, s.in_c / s.groups, s.kernel_h, s.kernel_w};
      wtag = tag::goihw;
    }
    const dt type = onednn_type(s.dtype);
    const memory::desc src_md(src, type, tag::nhwc), dst_md(dst, type, tag::nhwc);
    const memory::desc w_user(w, type, wtag), w_any(w, type, tag::any);
    const memory::desc dw_user(w, dt::f32, wtag), dw_any(w, dt::f32, tag::any);
    const memory::desc b_md = s.bias ? memory::desc({s.out_c}, dt::f32, tag::x) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    using dnnl::algorithm;
    using dnnl::prop_kind;
    dnnl::convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, src_md, w_any, b_md,
                                       dst_md, strides, pad_l, pad_r);
    dnnl::primitive_attr fwd_attr;  // its own: a copy of attr would share (and change) attr's handle
    fwd_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    fwd_attr.set_post_ops(activation_post_ops(act_));
    dnnl::convolution_forward::primitive_desc fwd_pd(fd, fwd_attr, eng);
    dnnl::convolution_backward_data::desc bd(algorithm::convolution_direct, src_md, w_any, dst_md, strides, pad_l,
                                             pad_r);
    dnnl::convolution_backward_data::primitive_desc bwd_data_pd(bd, attr, eng, fwd_pd);
    dnnl::convolution_backward_weights::desc wd(algorithm::convolution_direct, src_md, dw_any, b_md, dst_md, strides,
                                                pad_l, pad_r);
    dnnl::convolution_backward_weights::primitive_desc bwd_w_pd(wd, attr, eng, fwd_pd);
    prims_ = WeightedPrimitives(eng, src_md, dst_md, w_user, dw_user, b_md, fwd_pd, bwd_data_pd, bwd_w_pd);
  }

  OneDnnContextPtr ctx_;
  ConvShape s_;
  Activation act_;
  WeightedPrimitives prims_;
};

}  // namespace

std::unique_ptr<ConvOp> make_onednn_conv(OneDnnContextPtr ctx, const ConvShape& s, Activation act) {
  return std::make_unique<OneDnnConv>(std::move(ctx), s, act);
}

}  // namespace scaletrain::cpu
