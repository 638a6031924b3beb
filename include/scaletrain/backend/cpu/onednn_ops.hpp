// Factories of the CPU backend's oneDNN operators: oneDNN primitives (convolution, inner product,
// pooling, matmul) and oneDNN's sgemm on plain layouts. Each validates its shape and throws
// scaletrain::Error naming it when oneDNN cannot run it.
#pragma once
#include <memory>

#include "scaletrain/backend/cpu/onednn_context.hpp"
#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

// oneDNN's convolution primitive. With an activation (not none) the forward writes act(conv + b), the
// activation a oneDNN post-op.
std::unique_ptr<ConvOp> make_onednn_conv(OneDnnContextPtr ctx, const ConvShape& s,
                                         Activation act = Activation::none);
std::unique_ptr<InnerProductOp> make_onednn_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s);
std::unique_ptr<PoolOp> make_onednn_pool(OneDnnContextPtr ctx, const PoolShape& s);

// Inner product as oneDNN sgemm on plain layouts (no per-step weight reorders), f32.
std::unique_ptr<InnerProductOp> make_gemm_inner_product(const InnerProductShape& s);
// The bf16 counterpart: oneDNN's matmul primitive on plain layouts (matmul_inner_product.cpp). With an
// activation (not none) the forward writes act(x w^T + b), the activation a oneDNN post-op.
std::unique_ptr<InnerProductOp> make_matmul_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s,
                                                          Activation act = Activation::none);
// The matmul family (backend/ops.hpp) on oneDNN's matmul primitive with the shape's strides (batched
// products in one call, transposes as strides): f32, and bf16 where the CPU has bf16 instructions
// (native_bf16); other storage computes in f32 on widened copies. The gelu epilogue runs after it on
// the host (matmul_onednn.cpp).
std::unique_ptr<MatmulOp> make_onednn_matmul(OneDnnContextPtr ctx, const MatmulShape& s, bool native_bf16);
// 1x1, stride 1, unpadded, ungrouped: a GEMM over N*H*W rows (pointwise_conv.cpp), sgemm for f32,
// matmul for bf16. A bf16 one may take the layer's activation into its forward (a matmul post-op).
bool is_pointwise(const ConvShape& s);
std::unique_ptr<ConvOp> make_pointwise_conv(OneDnnContextPtr ctx, const ConvShape& s,
                                            Activation act = Activation::none);

}  // namespace scaletrain::cpu
