// The CPU backend's operator choice as data. For each operator, the candidates in the order they are
// tried, each with the condition that admits it (shape, storage type, the ISA's bf16 support, the
// run's settings, the bf16 GEMM way run.cpu_bf16_gemm set or timed) and the factory that makes it.
// The first admitted candidate makes the op, and its name becomes the op's implementation
// (OpImplementation), which the start-up table prints per layer. A candidate that wraps another op
// (f32 compute on low-precision storage, a convolution composed with activation kernels, a
// separable convolution composed of two) makes the wrapped op through the tables again, and its
// name carries the wrapped op's in brackets.
#pragma once
#include <memory>
#include <span>
#include <string>

#include "scaletrain/backend/cpu/bf16_gemm_shapes.hpp"
#include "scaletrain/backend/cpu/onednn_context.hpp"
#include "scaletrain/backend/ops.hpp"
#include "scaletrain/backend/stream.hpp"

namespace scaletrain::cpu {

// What the conditions read besides the shape.
struct CpuOpSettings {
  bool native_bf16 = false;       // oneDNN's ISA has AVX512-BF16 instructions (AMX CPUs included)
  bool onednn_only = false;       // run.cpu_onednn_only: oneDNN primitives everywhere (for comparisons)
  bool bf16_gemm_on_f32 = false;  // run.cpu_bf16_gemm, set or timed: bf16 GEMM-shaped ops as f32 GEMMs

  // Whether ops of this storage type compute in f32 on that storage: f16 always, bf16 without
  // AVX512-BF16 (Error for a type that is not f32, bf16 or f16).
  bool emulated(DType t) const;
  // Whether bf16 GEMM-shaped ops (inner products, pointwise convolutions) can run two ways, oneDNN's
  // bf16 kernels or f32 GEMMs on operands widened from bf16, and whether they run as f32 GEMMs.
  bool gemm_choosable(DType t) const { return t == DType::bf16 && native_bf16 && !onednn_only; }
  bool gemm_on_f32() const { return bf16_gemm_on_f32 && native_bf16 && !onednn_only; }
  // A bf16 convolution whose f32 shape the narrow-rows loops take (one input channel into few
  // outputs) computes in f32 on its bf16 storage: the bf16 products are exact in f32 either way, and
  // oneDNN's bf16 kernel has too few channels to fill its vectors.
  bool narrow_on_f32(const ConvShape& s) const;
};

// What a factory gets from the backend.
struct CpuOpContext {
  CpuOpSettings settings;
  OneDnnContextPtr onednn;
  Stream* stream = nullptr;              // where composed ops queue their activation kernels
  Bf16GemmShapes* gemm_shapes = nullptr;  // where the bf16 GEMM-shaped ops made are recorded (null: not)
};

template <class Shape, class Op>
struct OpCandidate {
  const char* name;  // the op's implementation: what runs it, direct loops or oneDNN
  bool (*admits)(const CpuOpSettings&, const Shape&);
  std::unique_ptr<Op> (*make)(const CpuOpContext&, const Shape&);
};

// A convolution with the activation after it (Backend::make_activated_conv).
struct ActivatedConvShape {
  ConvShape conv;
  Activation activation = Activation::none;
  std::string to_string() const { return conv.to_string() + " with " + activation_name(activation); }
};

// The tables, in the order their candidates are tried; each one's last candidate admits every shape.
std::span<const OpCandidate<ConvShape, ConvOp>> conv_candidates();
std::span<const OpCandidate<ActivatedConvShape, ActivatedConvOp>> activated_conv_candidates();
std::span<const OpCandidate<SeparableConvShape, SeparableConvOp>> separable_conv_candidates();
std::span<const OpCandidate<InnerProductShape, InnerProductOp>> inner_product_candidates();
std::span<const OpCandidate<PoolShape, PoolOp>> pool_candidates();

// The op of the first candidate that admits the shape.
std::unique_ptr<ConvOp> choose_conv(const CpuOpContext& c, const ConvShape& s);
std::unique_ptr<ActivatedConvOp> choose_activated_conv(const CpuOpContext& c, const ActivatedConvShape& s);
std::unique_ptr<SeparableConvOp> choose_separable_conv(const CpuOpContext& c, const SeparableConvShape& s);
std::unique_ptr<InnerProductOp> choose_inner_product(const CpuOpContext& c, const InnerProductShape& s);
std::unique_ptr<PoolOp> choose_pool(const CpuOpContext& c, const PoolShape& s);

}  // namespace scaletrain::cpu
