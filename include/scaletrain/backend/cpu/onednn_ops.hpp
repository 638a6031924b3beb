// Factories of the CPU backend's oneDNN operators (convolution, inner product, pooling). Each
// validates its shape and throws scaletrain::Error naming it when oneDNN cannot run it.
#pragma once
#include <memory>

#include "scaletrain/backend/cpu/onednn_context.hpp"
#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

std::unique_ptr<ConvOp> make_onednn_conv(OneDnnContextPtr ctx, const ConvShape& s);
std::unique_ptr<InnerProductOp> make_onednn_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s);
std::unique_ptr<PoolOp> make_onednn_pool(OneDnnContextPtr ctx, const PoolShape& s);
// Throws scaletrain::Error naming the shape when no pooling can run it (pool_onednn.cpp).
void validate_pool_shape(const PoolShape& s);
// Max pooling as plain loops with a saved argmax, for channel counts that are not a multiple of 16
// (max_pool_direct.cpp).
std::unique_ptr<PoolOp> make_direct_max_pool(const PoolShape& s);

// Inner product as oneDNN sgemm on plain layouts (no per-step weight reorders).
std::unique_ptr<InnerProductOp> make_gemm_inner_product(const InnerProductShape& s);
// 1x1, stride 1, unpadded, ungrouped: a GEMM over N*H*W rows (pointwise_conv.cpp).
bool is_pointwise(const ConvShape& s);
std::unique_ptr<ConvOp> make_pointwise_conv(const ConvShape& s);

}  // namespace scaletrain::cpu
