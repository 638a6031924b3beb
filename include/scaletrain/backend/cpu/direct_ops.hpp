// Factories of the CPU backend's direct operators: hand-written loops (vectorized with vec16.hpp),
// no oneDNN inside except where a factory says it wraps a oneDNN op for the passes it does not
// replace. Each shape predicate (prefers_*) is the shape condition under which the operator table
// (operator_table.cpp) admits the op; the thresholds are the shape properties where the loops stop
// winning against oneDNN's kernels.
#pragma once
#include <cstdint>
#include <memory>

#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

// Max pooling as loops vectorized across channels with a compact argmax (max_pool_direct.cpp), any
// channel count, f32/bf16/f16 (it only compares and copies, so low-precision storage needs no f32
// round trip).
std::unique_ptr<PoolOp> make_direct_max_pool(const PoolShape& s);

// Direct f32 convolution for few taps per output (IC * KH * KW <= kFewTapsMax, ungrouped), vectorized
// across output channels (conv_few_taps.cpp). Preferred with at least kFewTapsMinOutChannels outputs
// (not pointwise): with fewer, a 16-lane block of outputs is partly empty or too few blocks share each
// gathered input, and oneDNN's kernel is faster.
inline constexpr int64_t kFewTapsMax = 32;
inline constexpr int64_t kFewTapsMinOutChannels = 128;
bool prefers_few_taps(const ConvShape& s);
std::unique_ptr<ConvOp> make_few_taps_conv(const ConvShape& s);
// The same with the layer's activation applied inside.
std::unique_ptr<ActivatedConvOp> make_few_taps_activated_conv(const ConvShape& s, Activation act);

// A convolution whose backward-data pass runs direct f32 loops (columns of dy * w summed in registers
// and added onto a padded dx image), forward and weight gradient on `base`, a oneDNN op
// (conv_direct_backward_data.cpp). Preferred for ungrouped f32 with at most
// kDirectBackwardDataMaxInChannels input channels and kDirectBackwardDataMaxTaps taps: oneDNN's
// backward-data vectorizes over input channels, which few input channels leave mostly empty.
inline constexpr int64_t kDirectBackwardDataMaxTaps = 160;
inline constexpr int64_t kDirectBackwardDataMaxInChannels = 8;
bool prefers_direct_backward_data(const ConvShape& s);
std::unique_ptr<ConvOp> make_direct_backward_data_conv(std::unique_ptr<ConvOp> base, const ConvShape& s);

// Direct f32 convolution of one input channel into at most 16 outputs, stride 1 along rows,
// vectorized across a row's output pixels (conv_narrow_rows.cpp). Preferred up to
// kNarrowRowsMaxOutChannels outputs: with more, the planar dy rows one tap sweep of the weight
// gradient reads no longer stay in L1.
inline constexpr int64_t kNarrowRowsMaxOutChannels = 8;
bool prefers_narrow_rows(const ConvShape& s);
std::unique_ptr<ConvOp> make_narrow_rows_conv(const ConvShape& s);
// The same with the layer's activation applied inside; it can run the max pooling after it
// (absorb_pool).
std::unique_ptr<ActivatedConvOp> make_narrow_rows_activated_conv(const ConvShape& s, Activation act);

// Direct f32 depthwise convolution (groups == in_c == out_c), any kernel, stride and padding, over a
// batch (depthwise_conv_direct.cpp): for tests and perf/bench_conv; the operator table keeps oneDNN's.
std::unique_ptr<ConvOp> make_direct_depthwise_conv(const ConvShape& s);

// SeparableConv2D's depthwise + pointwise pair fused image by image (separable_conv_fused.cpp), f32.
// Preferred for images of at least kFusedSeparableMinImagePixels output pixels: below that one image's
// intermediates are too small for keeping them in cache to pay for the per-image GEMM calls.
inline constexpr int64_t kFusedSeparableMinImagePixels = 7 * 7;
bool prefers_fused_separable(const SeparableConvShape& s);
std::unique_ptr<SeparableConvOp> make_fused_separable_conv(const SeparableConvShape& s);

}  // namespace scaletrain::cpu
