// Max and average pooling (padding excluded from the average's divisor, or counted with count_include_pad) with oneDNN
// primitives created once per shape, NHWC, f32 or bf16; max pooling keeps its argmax workspace inside the op for
// backward.
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

class OneDnnPool final : public PoolOp {
 public:
  OneDnnPool(OneDnnContextPtr ctx, const PoolShape& s) : ctx_(std::move(ctx)), s_(s) {
    s.validate();
    try {
      build();
    } catch (const dnnl::error& e) {
      ST_FAIL("oneDNN cannot create pooling ", s.to_string(), ": ", e.what());
    }
  }

  void forward(const void* x, void* y, bool training) override {
    src_.set_data_handle(const_cast<void*>(x));
    dst_.set_data_handle(y);
    if (training) {
      fwd_train_call_.run(ctx_->stream);
      have_workspace_ = true;
    } else {
      fwd_infer_call_.run(ctx_->stream);
    }
    ctx_->stream.wait();
  }

  void backward(const void* dy, void* dx) override {
    ST_CHECK(have_workspace_ || s_.kind != PoolKind::max, "max pooling ", s_.to_string(),
             ": backward called before a forward with training = true");
    dst_.set_data_handle(const_cast<void*>(dy));
    src_.set_data_handle(dx);
    bwd_call_.run(ctx_->stream);
    ctx_->stream.wait();
  }

 private:
  void build() {
    const PoolShape& s = s_;
    auto& eng = ctx_->engine;
    const dt type = onednn_type(s.dtype);
    const memory::desc src_md({s.batch, s.channels, s.in_h, s.in_w}, type, tag::nhwc);
    const memory::desc dst_md({s.batch, s.channels, s.out_h(), s.out_w()}, type, tag::nhwc);
    const memory::dims strides{s.stride_h, s.stride_w}, kernel{s.kernel_h, s.kernel_w};
    const memory::dims pad_l{s.pad_top, s.pad_left}, pad_r{s.pad_bottom, s.pad_right};
    const auto alg = s.kind == PoolKind::max ? dnnl::algorithm::pooling_max
                     : s.count_include_pad   ? dnnl::algorithm::pooling_avg_include_padding
                                             : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);

    using dnnl::prop_kind;
    dnnl::pooling_forward::desc train_d(prop_kind::forward_training, alg, src_md, dst_md, strides, kernel, pad_l,
                                        pad_r);
    dnnl::pooling_forward::primitive_desc train_pd(train_d, attr, eng);
    dnnl::pooling_forward::desc infer_d(prop_kind::forward_inference, alg, src_md, dst_md, strides, kernel, pad_l,
                                        pad_r);
    dnnl::pooling_forward::primitive_desc infer_pd(infer_d, attr, eng);
    dnnl::pooling_backward::desc bwd_d(alg, src_md, dst_md, strides, kernel, pad_l, pad_r);
    dnnl::pooling_backward::primitive_desc bwd_pd(bwd_d, attr, eng, train_pd);
    const dnnl::pooling_forward fwd_train(train_pd);
    const dnnl::pooling_forward fwd_infer(infer_pd);
    const dnnl::pooling_backward bwd(bwd_pd);

    src_ = unbound_memory(src_md, eng);
    dst_ = unbound_memory(dst_md, eng);
    const size_t scratch = std::max({train_pd.scratchpad_desc().get_size(), infer_pd.scratchpad_desc().get_size(),
                                     bwd_pd.scratchpad_desc().get_size()});
    scratch_storage_ = host_bytes(scratch);
    Args fwd_train_args{{DNNL_ARG_SRC, src_},
                        {DNNL_ARG_DST, dst_},
                        {DNNL_ARG_SCRATCHPAD, memory(train_pd.scratchpad_desc(), eng, scratch_storage_.raw())}};
    Args fwd_infer_args{{DNNL_ARG_SRC, src_},
                        {DNNL_ARG_DST, dst_},
                        {DNNL_ARG_SCRATCHPAD, memory(infer_pd.scratchpad_desc(), eng, scratch_storage_.raw())}};
    Args bwd_args{{DNNL_ARG_DIFF_DST, dst_},
                  {DNNL_ARG_DIFF_SRC, src_},
                  {DNNL_ARG_SCRATCHPAD, memory(bwd_pd.scratchpad_desc(), eng, scratch_storage_.raw())}};
    const memory::desc ws_md = train_pd.workspace_desc();
    if (ws_md.get_size() > 0) {
      workspace_storage_ = host_bytes(ws_md.get_size());
      const memory ws(ws_md, eng, workspace_storage_.raw());
      fwd_train_args[DNNL_ARG_WORKSPACE] = ws;
      bwd_args[DNNL_ARG_WORKSPACE] = ws;
    }
    fwd_train_call_ = PrimitiveCall(fwd_train, fwd_train_args);
    fwd_infer_call_ = PrimitiveCall(fwd_infer, fwd_infer_args);
    bwd_call_ = PrimitiveCall(bwd, bwd_args);
  }

  OneDnnContextPtr ctx_;
  PoolShape s_;
  memory src_, dst_;  // rebound to the caller's buffers on every call
  Tensor scratch_storage_, workspace_storage_;
  PrimitiveCall fwd_train_call_, fwd_infer_call_, bwd_call_;
  bool have_workspace_ = false;
};

}  // namespace

std::unique_ptr<PoolOp> make_onednn_pool(OneDnnContextPtr ctx, const PoolShape& s) {
  return std::make_unique<OneDnnPool>(std::move(ctx), s);
}

}  // namespace scaletrain::cpu
