// Wrappers that run an f32 operator on bf16 or f16 storage: inputs widened to f32, outputs rounded
// back (emulated_ops.cpp). The wrapped op is any f32 op (direct or oneDNN).
#pragma once
#include <memory>

#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

std::unique_ptr<ConvOp> make_emulated_conv(std::unique_ptr<ConvOp> f32_op, const ConvShape& s);
std::unique_ptr<InnerProductOp> make_emulated_inner_product(std::unique_ptr<InnerProductOp> f32_op,
                                                            const InnerProductShape& s);
std::unique_ptr<PoolOp> make_emulated_pool(std::unique_ptr<PoolOp> f32_op, const PoolShape& s);

}  // namespace scaletrain::cpu
