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
// Max pooling as loops vectorized across channels with a compact argmax (max_pool_direct.cpp), any
// channel count, f32/bf16/f16; training forward + backward faster than oneDNN 2.6's pooling at every
// shape of fmnist_sepcnn and lenet (perf/bench_pool).
std::unique_ptr<PoolOp> make_direct_max_pool(const PoolShape& s);

// Inner product as oneDNN sgemm on plain layouts (no per-step weight reorders), f32.
std::unique_ptr<InnerProductOp> make_gemm_inner_product(const InnerProductShape& s);
// The bf16 counterpart: oneDNN's matmul primitive on plain layouts (matmul_inner_product.cpp).
std::unique_ptr<InnerProductOp> make_matmul_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s);
// 1x1, stride 1, unpadded, ungrouped: a GEMM over N*H*W rows (pointwise_conv.cpp), sgemm for f32,
// matmul for bf16.
bool is_pointwise(const ConvShape& s);
std::unique_ptr<ConvOp> make_pointwise_conv(OneDnnContextPtr ctx, const ConvShape& s);

// f32 operators on bf16 or f16 storage: inputs widened to f32, outputs rounded back (emulated_ops.cpp).
std::unique_ptr<ConvOp> make_emulated_conv(std::unique_ptr<ConvOp> f32_op, const ConvShape& s);
std::unique_ptr<InnerProductOp> make_emulated_inner_product(std::unique_ptr<InnerProductOp> f32_op,
                                                            const InnerProductShape& s);
std::unique_ptr<PoolOp> make_emulated_pool(std::unique_ptr<PoolOp> f32_op, const PoolShape& s);

}  // namespace scaletrain::cpu
