// Helpers shared by the oneDNN ops: unbound memories, op-owned host storage, PrimitiveCall
// (execution with prebound arguments), LayoutBridge (cached weight-layout reorders) and
// WeightedPrimitives (the bound forward/backward triple of convolution and inner product).
#include "scaletrain/backend/cpu/onednn_context.hpp"

#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>

#include "scaletrain/core/check_dnnl.hpp"
#include "scaletrain/kernels/activation.hpp"

namespace scaletrain::cpu {

dnnl::post_ops activation_post_ops(Activation act) {
  dnnl::post_ops ops;
  if (act == Activation::relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (act == Activation::relu6) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
  if (act == Activation::selu)
    ops.append_eltwise(kernels::kSeluScale, dnnl::algorithm::eltwise_elu, kernels::kSeluAlpha, 0.0f);
  if (act == Activation::gelu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
  return ops;
}

dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& eng) {
  dnnl::memory m;
  ST_DNNL_CHECK(m = dnnl::memory(md, eng, DNNL_MEMORY_NONE));
  return m;
}

Tensor host_bytes(size_t bytes) {
  // At least one element so that a zero-sized scratchpad still has a valid pointer.
  return Tensor({static_cast<int64_t>(bytes + 3) / 4 + 1}, DType::f32, "onednn.scratchpad");
}

dnnl::memory::data_type onednn_type(DType t) {
  switch (t) {
    case DType::f32: return dnnl::memory::data_type::f32;
    case DType::bf16: return dnnl::memory::data_type::bf16;
    case DType::f16: return dnnl::memory::data_type::f16;
    default: break;
  }
  ST_FAIL("oneDNN operators take f32, bf16 or f16 data, not ", dtype_name(t));
}

PrimitiveCall::PrimitiveCall(dnnl::primitive primitive, const std::unordered_map<int, dnnl::memory>& args)
    : primitive_(std::move(primitive)) {
  memories_.reserve(args.size());
  args_.reserve(args.size());
  for (const auto& [arg, mem] : args) {
    memories_.push_back(mem);
    args_.push_back({arg, mem.get()});
  }
}

void PrimitiveCall::run(dnnl::stream& s) const {
  const dnnl_status_t status =
      dnnl_primitive_execute(primitive_.get(), s.get(), static_cast<int>(args_.size()), args_.data());
  if (status != dnnl_success) {
    throw_error(__FILE__, __LINE__, "oneDNN",
                detail::concat("executing ", dnnl_prim_kind2str(dnnl::convert_to_c(primitive_.get_kind())),
                               " failed: status ", static_cast<int>(status)));
  }
}

LayoutBridge::LayoutBridge(const dnnl::memory::desc& user, const dnnl::memory::desc& internal,
                           const dnnl::engine& eng) {
  needed_ = user != internal;
  user_ = unbound_memory(user, eng);
  if (!needed_) return;
  storage_ = host_bytes(internal.get_size());
  ST_DNNL_CHECK(internal_ = dnnl::memory(internal, eng, storage_.raw()));
  to_internal_ = PrimitiveCall(dnnl::reorder(user_, internal_), {{DNNL_ARG_FROM, user_}, {DNNL_ARG_TO, internal_}});
  to_user_ = PrimitiveCall(dnnl::reorder(internal_, user_), {{DNNL_ARG_FROM, internal_}, {DNNL_ARG_TO, user_}});
}

void LayoutBridge::to_internal(dnnl::stream& s, const void* user) {
  user_.set_data_handle(const_cast<void*>(user));
  if (!needed_) return;
  to_internal_.run(s);
}

void LayoutBridge::to_user(dnnl::stream& s) {
  if (!needed_) return;
  to_user_.run(s);
}

WeightedPrimitives::WeightedPrimitives(const dnnl::engine& eng, const dnnl::memory::desc& src_md,
                                       const dnnl::memory::desc& dst_md, const dnnl::memory::desc& w_user,
                                       const dnnl::memory::desc& dw_user, const dnnl::memory::desc& b_md,
                                       const dnnl::primitive_desc& fwd_pd,
                                       const dnnl::primitive_desc& bwd_data_pd, const dnnl::primitive_desc& bwd_w_pd)
    : bias_(!b_md.is_zero()) {
  w_fwd_ = LayoutBridge(w_user, fwd_pd.weights_desc(), eng);
  w_bwd_data_ = LayoutBridge(w_user, bwd_data_pd.weights_desc(), eng);
  dw_ = LayoutBridge(dw_user, bwd_w_pd.diff_weights_desc(), eng);
  src_ = unbound_memory(src_md, eng);
  dst_ = unbound_memory(dst_md, eng);
  if (bias_) b_ = unbound_memory(b_md, eng);

  const size_t scratch = std::max({fwd_pd.scratchpad_desc().get_size(), bwd_data_pd.scratchpad_desc().get_size(),
                                   bwd_w_pd.scratchpad_desc().get_size()});
  scratch_storage_ = host_bytes(scratch);
  auto scratchpad = [&](const dnnl::primitive_desc& pd) {
    return dnnl::memory(pd.scratchpad_desc(), eng, scratch_storage_.raw());
  };
  std::unordered_map<int, dnnl::memory> fwd_args{{DNNL_ARG_SRC, src_},
                                                 {DNNL_ARG_WEIGHTS, w_fwd_.internal()},
                                                 {DNNL_ARG_DST, dst_},
                                                 {DNNL_ARG_SCRATCHPAD, scratchpad(fwd_pd)}};
  const std::unordered_map<int, dnnl::memory> bwd_data_args{{DNNL_ARG_DIFF_DST, dst_},
                                                            {DNNL_ARG_WEIGHTS, w_bwd_data_.internal()},
                                                            {DNNL_ARG_DIFF_SRC, src_},
                                                            {DNNL_ARG_SCRATCHPAD, scratchpad(bwd_data_pd)}};
  std::unordered_map<int, dnnl::memory> bwd_w_args{{DNNL_ARG_SRC, src_},
                                                   {DNNL_ARG_DIFF_DST, dst_},
                                                   {DNNL_ARG_DIFF_WEIGHTS, dw_.internal()},
                                                   {DNNL_ARG_SCRATCHPAD, scratchpad(bwd_w_pd)}};
  if (bias_) {
    fwd_args[DNNL_ARG_BIAS] = b_;
    bwd_w_args[DNNL_ARG_DIFF_BIAS] = b_;
  }
  fwd_call_ = PrimitiveCall(dnnl::primitive(fwd_pd), fwd_args);
  bwd_data_call_ = PrimitiveCall(dnnl::primitive(bwd_data_pd), bwd_data_args);
  bwd_w_call_ = PrimitiveCall(dnnl::primitive(bwd_w_pd), bwd_w_args);
}

void WeightedPrimitives::forward(dnnl::stream& s, const void* x, const void* w, const float* b, void* y) {
  src_.set_data_handle(const_cast<void*>(x));
  dst_.set_data_handle(y);
  if (bias_) b_.set_data_handle(const_cast<float*>(b));
  w_fwd_.to_internal(s, w);
  fwd_call_.run(s);
  s.wait();
}

void WeightedPrimitives::backward_data(dnnl::stream& s, const void* dy, const void* w, void* dx) {
  dst_.set_data_handle(const_cast<void*>(dy));
  src_.set_data_handle(dx);
  w_bwd_data_.to_internal(s, w);
  bwd_data_call_.run(s);
  s.wait();
}

void WeightedPrimitives::backward_weights(dnnl::stream& s, const void* x, const void* dy, float* dw, float* db) {
  src_.set_data_handle(const_cast<void*>(x));
  dst_.set_data_handle(const_cast<void*>(dy));
  if (bias_) b_.set_data_handle(db);
  dw_.bind_user(dw);
  bwd_w_call_.run(s);
  dw_.to_user(s);
  s.wait();
}

}  // namespace scaletrain::cpu
