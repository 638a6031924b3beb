// Factories of the CPU backend's oneDNN operators (convolution, inner product, pooling). Each
// validates its shape and throws scaletrain::Error naming it when oneDNN cannot run it.
#pragma once
#include <memory>

#include "scaletrain/backend/cpu/onednn_context.hpp"
#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

std::unique_ptr<ConvOp> make_onednn_conv(OneDnnContextPtr ctx, const ConvShape& s,
                                         Activation act = Activation::none);
std::unique_ptr<InnerProductOp> make_onednn_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s);
std::unique_ptr<PoolOp> make_onednn_pool(OneDnnContextPtr ctx, const PoolShape& s);
// Max pooling as loops vectorized across channels with a compact argmax (max_pool_direct.cpp), any
// channel count, f32/bf16/f16; training forward + backward faster than oneDNN 2.6's pooling at every
// shape of fmnist_sepcnn and lenet (perf/bench_pool).
std::unique_ptr<PoolOp> make_direct_max_pool(const PoolShape& s);

// Inner product as oneDNN sgemm on plain layouts (no per-step weight reorders), f32.
std::unique_ptr<InnerProductOp> make_gemm_inner_product(const InnerProductShape& s);
// The bf16 counterpart: oneDNN's matmul primitive on plain layouts (matmul_inner_product.cpp). With an
// activation (not none) the forward writes act(x w^T + b), the activation a oneDNN post-op.
std::unique_ptr<InnerProductOp> make_matmul_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s,
                                                          Activation act = Activation::none);
// 1x1, stride 1, unpadded, ungrouped: a GEMM over N*H*W rows (pointwise_conv.cpp), sgemm for f32,
// matmul for bf16. A bf16 one may take the layer's activation into its forward (a matmul post-op).
bool is_pointwise(const ConvShape& s);
std::unique_ptr<ConvOp> make_pointwise_conv(OneDnnContextPtr ctx, const ConvShape& s,
                                            Activation act = Activation::none);
// Direct f32 convolution for few taps per output (IC * KH * KW <= kFewTapsMax, ungrouped), vectorized
// across output channels (conv_few_taps.cpp). make_conv takes it where prefers_few_taps says (at
// least kFewTapsMinOutChannels outputs, not pointwise), where perf/bench_conv measured it faster
// than oneDNN 2.6's kernels.
inline constexpr int64_t kFewTapsMax = 32;
inline constexpr int64_t kFewTapsMinOutChannels = 128;
bool prefers_few_taps(const ConvShape& s);
std::unique_ptr<ConvOp> make_few_taps_conv(const ConvShape& s);
// The same with the layer's activation applied inside (make_activated_conv takes it where
// prefers_few_taps says).
std::unique_ptr<ActivatedConvOp> make_few_taps_activated_conv(const ConvShape& s, Activation act);
// A convolution whose backward-data pass runs direct f32 loops (columns of dy * w summed in registers
// and added onto a padded dx image), forward and weight gradient on `base` (conv_direct_backward_data.cpp):
// make_conv wraps oneDNN's op where prefers_direct_backward_data says (ungrouped f32 with at most
// kDirectBackwardDataMaxInChannels input channels and kDirectBackwardDataMaxTaps taps: LeNet's second
// layer), where perf/bench_conv measured it faster than oneDNN's backward-data (which vectorizes over
// input channels).
inline constexpr int64_t kDirectBackwardDataMaxTaps = 160;
inline constexpr int64_t kDirectBackwardDataMaxInChannels = 8;
bool prefers_direct_backward_data(const ConvShape& s);
std::unique_ptr<ConvOp> make_direct_backward_data_conv(std::unique_ptr<ConvOp> base, const ConvShape& s);
// Direct f32 convolution of one input channel into at most 16 outputs, stride 1 along rows,
// vectorized across a row's output pixels (conv_narrow_rows.cpp): make_conv takes it where
// prefers_narrow_rows says (up to kNarrowRowsMaxOutChannels outputs: LeNet's first layer), where
// perf/bench_conv measured it faster than oneDNN.
inline constexpr int64_t kNarrowRowsMaxOutChannels = 8;
bool prefers_narrow_rows(const ConvShape& s);
std::unique_ptr<ConvOp> make_narrow_rows_conv(const ConvShape& s);
// The same with the layer's activation applied inside (make_activated_conv takes it where
// prefers_narrow_rows says, activation other than none).
std::unique_ptr<ActivatedConvOp> make_narrow_rows_activated_conv(const ConvShape& s, Activation act);
// Direct f32 depthwise convolution (groups == in_c == out_c), any kernel, stride and padding, over a
// batch (depthwise_conv_direct.cpp): for tests and perf/bench_conv; make_conv keeps oneDNN's.
std::unique_ptr<ConvOp> make_direct_depthwise_conv(const ConvShape& s);
// SeparableConv2D's depthwise + pointwise pair fused image by image (separable_conv_fused.cpp), f32:
// make_separable_conv takes it where prefers_fused_separable says (images of at least
// kFusedSeparableMinImagePixels output pixels, where perf/bench_conv measured it faster).
inline constexpr int64_t kFusedSeparableMinImagePixels = 7 * 7;
bool prefers_fused_separable(const SeparableConvShape& s);
std::unique_ptr<SeparableConvOp> make_fused_separable_conv(const SeparableConvShape& s);

// f32 operators on bf16 or f16 storage: inputs widened to f32, outputs rounded back (emulated_ops.cpp).
std::unique_ptr<ConvOp> make_emulated_conv(std::unique_ptr<ConvOp> f32_op, const ConvShape& s);
std::unique_ptr<InnerProductOp> make_emulated_inner_product(std::unique_ptr<InnerProductOp> f32_op,
                                                            const InnerProductShape& s);
std::unique_ptr<PoolOp> make_emulated_pool(std::unique_ptr<PoolOp> f32_op, const PoolShape& s);

}  // namespace scaletrain::cpu
