// The CPU backend's operator tables (operator_table.hpp): per operator, the candidates in order with
// the condition that admits each, and the walk that makes the first admitted one.
#include "scaletrain/backend/cpu/operator_table.hpp"

#include <string>

#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/backend/cpu/emulated_ops.hpp"
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cpu {

bool CpuOpSettings::emulated(DType t) const {
  switch (t) {
    case DType::f32: return false;
    case DType::bf16: return !native_bf16;
    case DType::f16: return true;
    default: break;
  }
  ST_FAIL("the cpu backend computes in f32, bf16 or f16, not ", dtype_name(t));
}

bool CpuOpSettings::narrow_on_f32(const ConvShape& s) const {
  ConvShape f32 = s;
  f32.dtype = DType::f32;
  return s.dtype == DType::bf16 && prefers_narrow_rows(f32) && !onednn_only;
}

namespace {

template <class Shape>
Shape as_f32(Shape s) {
  s.dtype = DType::f32;
  return s;
}

// `op`, its implementation set to `inner`: the wrapped op's, which the walk puts in brackets after
// the candidate's name.
template <class Op>
std::unique_ptr<Op> wrapping(std::unique_ptr<Op> op, std::string inner) {
  op->set_implementation(std::move(inner));
  return op;
}

// Ops composed with their activation take over a max pooling after them with the direct max pooling,
// forming the activation's gradient at the pooled size (compose_post_activated_conv).
PoolAbsorption direct_pool_absorption() {
  return {[](const PoolShape& p) { return make_direct_max_pool(p); },
          [](const Shape& shape, DType t, const std::string& name) { return Tensor(shape, t, name); }};
}

template <class Shape, class Op>
std::unique_ptr<Op> choose(std::span<const OpCandidate<Shape, Op>> table, const CpuOpContext& c, const Shape& s) {
  for (const OpCandidate<Shape, Op>& candidate : table) {
    if (!candidate.admits(c.settings, s)) continue;
    std::unique_ptr<Op> op = candidate.make(c, s);
    const std::string inner = op->implementation();
    op->set_implementation(inner.empty() ? std::string(candidate.name)
                                         : std::string(candidate.name) + " [" + inner + "]");
    return op;
  }
  ST_FAIL("internal error: no CPU operator admits ", s.to_string());
}

using Settings = CpuOpSettings;

// Convolutions. bf16 pointwise ones run as the measured or set GEMM way; low-precision storage
// without native kernels runs the f32 table's op; then the direct loops where their shape conditions
// hold; oneDNN's primitive for the rest.
constexpr OpCandidate<ConvShape, ConvOp> kConv[] = {
    {"f32 GEMM on widened bf16 (run.cpu_bf16_gemm)",
     [](const Settings& t, const ConvShape& s) { return t.gemm_choosable(s.dtype) && is_pointwise(s) && t.gemm_on_f32(); },
     [](const CpuOpContext& c, const ConvShape& s) {
       if (c.gemm_shapes) c.gemm_shapes->record(s);
       auto f32 = choose_conv(c, as_f32(s));
       std::string inner = f32->implementation();
       return wrapping(make_emulated_conv(std::move(f32), s), std::move(inner));
     }},
    {"oneDNN bf16 matmul (pointwise)",
     [](const Settings& t, const ConvShape& s) { return t.gemm_choosable(s.dtype) && is_pointwise(s); },
     [](const CpuOpContext& c, const ConvShape& s) {
       if (c.gemm_shapes) c.gemm_shapes->record(s);
       return make_pointwise_conv(c.onednn, s);
     }},
    {"f32 on low-precision storage",
     [](const Settings& t, const ConvShape& s) { return t.emulated(s.dtype) || t.narrow_on_f32(s); },
     [](const CpuOpContext& c, const ConvShape& s) {
       auto f32 = choose_conv(c, as_f32(s));
       std::string inner = f32->implementation();
       return wrapping(make_emulated_conv(std::move(f32), s), std::move(inner));
     }},
    {"oneDNN sgemm (pointwise)",
     [](const Settings& t, const ConvShape& s) { return is_pointwise(s) && !t.onednn_only; },
     [](const CpuOpContext& c, const ConvShape& s) { return make_pointwise_conv(c.onednn, s); }},
    {"direct few taps",
     [](const Settings& t, const ConvShape& s) { return prefers_few_taps(s) && !t.onednn_only; },
     [](const CpuOpContext&, const ConvShape& s) { return make_few_taps_conv(s); }},
    {"direct narrow rows",
     [](const Settings& t, const ConvShape& s) { return prefers_narrow_rows(s) && !t.onednn_only; },
     [](const CpuOpContext&, const ConvShape& s) { return make_narrow_rows_conv(s); }},
    {"direct backward-data, oneDNN convolution forward and weight gradient",
     [](const Settings& t, const ConvShape& s) { return prefers_direct_backward_data(s) && !t.onednn_only; },
     [](const CpuOpContext& c, const ConvShape& s) {
       return make_direct_backward_data_conv(make_onednn_conv(c.onednn, s), s);
     }},
    {"oneDNN convolution", [](const Settings&, const ConvShape&) { return true; },
     [](const CpuOpContext& c, const ConvShape& s) { return make_onednn_conv(c.onednn, s); }},
};

// Convolutions with their activation: the direct loops apply it per tile while the output is in
// cache; native bf16 convolutions take it as oneDNN's post-op (and can take over the max pooling
// after them); the rest are the convolution table's op with the activation's kernels after it.
bool native_bf16_post_op(const Settings& t, const ActivatedConvShape& s) {
  return s.activation != Activation::none && s.conv.dtype == DType::bf16 && !t.emulated(s.conv.dtype) &&
         !t.onednn_only;
}
constexpr OpCandidate<ActivatedConvShape, ActivatedConvOp> kActivatedConv[] = {
    {"direct few taps, activation inside",
     [](const Settings& t, const ActivatedConvShape& s) {
       return s.activation != Activation::none && prefers_few_taps(s.conv) && !t.onednn_only;
     },
     [](const CpuOpContext&, const ActivatedConvShape& s) { return make_few_taps_activated_conv(s.conv, s.activation); }},
    {"direct narrow rows, activation inside",
     [](const Settings& t, const ActivatedConvShape& s) {
       return s.activation != Activation::none && prefers_narrow_rows(s.conv) && !t.onednn_only;
     },
     [](const CpuOpContext&, const ActivatedConvShape& s) {
       return make_narrow_rows_activated_conv(s.conv, s.activation);
     }},
    {"oneDNN bf16 matmul (pointwise), activation as post-op",
     [](const Settings& t, const ActivatedConvShape& s) {
       return native_bf16_post_op(t, s) && is_pointwise(s.conv) && !t.gemm_on_f32();
     },
     [](const CpuOpContext& c, const ActivatedConvShape& s) {
       if (c.gemm_shapes) c.gemm_shapes->record(s.conv);
       return compose_post_activated_conv(s.conv, s.activation, make_pointwise_conv(c.onednn, s.conv, s.activation),
                                          *c.stream, direct_pool_absorption());
     }},
    {"oneDNN bf16 convolution, activation as post-op",
     [](const Settings& t, const ActivatedConvShape& s) {
       return native_bf16_post_op(t, s) && !is_pointwise(s.conv) && !t.narrow_on_f32(s.conv);
     },
     [](const CpuOpContext& c, const ActivatedConvShape& s) {
       return compose_post_activated_conv(s.conv, s.activation, make_onednn_conv(c.onednn, s.conv, s.activation),
                                          *c.stream, direct_pool_absorption());
     }},
    {"activation kernels after", [](const Settings&, const ActivatedConvShape&) { return true; },
     [](const CpuOpContext& c, const ActivatedConvShape& s) {
       auto conv = choose_conv(c, s.conv);
       std::string inner = conv->implementation();
       return wrapping(compose_activated_conv(s.conv, s.activation, std::move(conv), *c.stream), std::move(inner));
     }},
};

// Separable convolutions: f32 ones fused image by image; the rest the depthwise convolution, then the
// pointwise one with the activation, each from its table.
constexpr OpCandidate<SeparableConvShape, SeparableConvOp> kSeparableConv[] = {
    {"fused image by image: direct depthwise, oneDNN sgemm pointwise",
     [](const Settings& t, const SeparableConvShape& s) { return prefers_fused_separable(s) && !t.onednn_only; },
     [](const CpuOpContext&, const SeparableConvShape& s) { return make_fused_separable_conv(s); }},
    {"depthwise then pointwise", [](const Settings&, const SeparableConvShape&) { return true; },
     [](const CpuOpContext& c, const SeparableConvShape& s) {
       auto depthwise = choose_conv(c, s.depthwise);
       auto pointwise = choose_activated_conv(c, {s.pointwise, s.activation});
       std::string inner = "depthwise: " + depthwise->implementation() + "; pointwise: " + pointwise->implementation();
       return wrapping(compose_separable_conv(s, std::move(depthwise), std::move(pointwise)), std::move(inner));
     }},
};

// Inner products: bf16 ones the measured or set GEMM way; low-precision storage without native
// kernels the f32 table's op; f32 oneDNN's sgemm on plain layouts (oneDNN's primitive where
// run.cpu_onednn_only asks).
constexpr OpCandidate<InnerProductShape, InnerProductOp> kInnerProduct[] = {
    {"f32 GEMM on widened bf16 (run.cpu_bf16_gemm)",
     [](const Settings& t, const InnerProductShape& s) { return t.gemm_choosable(s.dtype) && t.gemm_on_f32(); },
     [](const CpuOpContext& c, const InnerProductShape& s) {
       if (c.gemm_shapes) c.gemm_shapes->record(s);
       auto f32 = choose_inner_product(c, as_f32(s));
       std::string inner = f32->implementation();
       return wrapping(make_emulated_inner_product(std::move(f32), s), std::move(inner));
     }},
    {"oneDNN bf16 matmul", [](const Settings& t, const InnerProductShape& s) { return t.gemm_choosable(s.dtype); },
     [](const CpuOpContext& c, const InnerProductShape& s) {
       if (c.gemm_shapes) c.gemm_shapes->record(s);
       return make_matmul_inner_product(c.onednn, s);
     }},
    {"f32 on low-precision storage", [](const Settings& t, const InnerProductShape& s) { return t.emulated(s.dtype); },
     [](const CpuOpContext& c, const InnerProductShape& s) {
       auto f32 = choose_inner_product(c, as_f32(s));
       std::string inner = f32->implementation();
       return wrapping(make_emulated_inner_product(std::move(f32), s), std::move(inner));
     }},
    {"oneDNN inner product", [](const Settings& t, const InnerProductShape&) { return t.onednn_only; },
     [](const CpuOpContext& c, const InnerProductShape& s) { return make_onednn_inner_product(c.onednn, s); }},
    {"oneDNN sgemm", [](const Settings&, const InnerProductShape&) { return true; },
     [](const CpuOpContext&, const InnerProductShape& s) { return make_gemm_inner_product(s); }},
};

// Pooling: max pooling on the direct loops at every channel count and storage type (it only compares
// and copies); average pooling on oneDNN's primitive, in f32 where the storage type is emulated.
constexpr OpCandidate<PoolShape, PoolOp> kPool[] = {
    {"direct max pooling",
     [](const Settings& t, const PoolShape& s) { return s.kind == PoolKind::max && !t.onednn_only; },
     [](const CpuOpContext&, const PoolShape& s) { return make_direct_max_pool(s); }},
    {"f32 on low-precision storage", [](const Settings& t, const PoolShape& s) { return t.emulated(s.dtype); },
     [](const CpuOpContext& c, const PoolShape& s) {
       auto f32 = choose_pool(c, as_f32(s));
       std::string inner = f32->implementation();
       return wrapping(make_emulated_pool(std::move(f32), s), std::move(inner));
     }},
    {"oneDNN pooling", [](const Settings&, const PoolShape&) { return true; },
     [](const CpuOpContext& c, const PoolShape& s) { return make_onednn_pool(c.onednn, s); }},
};

}  // namespace

std::span<const OpCandidate<ConvShape, ConvOp>> conv_candidates() { return kConv; }
std::span<const OpCandidate<ActivatedConvShape, ActivatedConvOp>> activated_conv_candidates() {
  return kActivatedConv;
}
std::span<const OpCandidate<SeparableConvShape, SeparableConvOp>> separable_conv_candidates() {
  return kSeparableConv;
}
std::span<const OpCandidate<InnerProductShape, InnerProductOp>> inner_product_candidates() { return kInnerProduct; }
std::span<const OpCandidate<PoolShape, PoolOp>> pool_candidates() { return kPool; }

std::unique_ptr<ConvOp> choose_conv(const CpuOpContext& c, const ConvShape& s) {
  return choose(conv_candidates(), c, s);
}
std::unique_ptr<ActivatedConvOp> choose_activated_conv(const CpuOpContext& c, const ActivatedConvShape& s) {
  return choose(activated_conv_candidates(), c, s);
}
std::unique_ptr<SeparableConvOp> choose_separable_conv(const CpuOpContext& c, const SeparableConvShape& s) {
  return choose(separable_conv_candidates(), c, s);
}
std::unique_ptr<InnerProductOp> choose_inner_product(const CpuOpContext& c, const InnerProductShape& s) {
  return choose(inner_product_candidates(), c, s);
}
std::unique_ptr<PoolOp> choose_pool(const CpuOpContext& c, const PoolShape& s) {
  return choose(pool_candidates(), c, s);
}

}  // namespace scaletrain::cpu
