// Precision: the names users give floating-point types in configuration (train.precision,
// comm.dtype): fp32, bf16, fp16, and the storage DType each names.
#pragma once
#include <string>

#include "scaletrain/core/dtype.hpp"

namespace scaletrain {

enum class Precision { fp32, bf16, fp16 };

// "fp32" | "bf16" | "fp16" (also "f32", "float32", "bfloat16", "f16", "float16"); Error otherwise.
Precision parse_precision(const std::string& name);
std::string precision_name(Precision p);
constexpr DType precision_dtype(Precision p) {
  return p == Precision::fp32 ? DType::f32 : (p == Precision::bf16 ? DType::bf16 : DType::f16);
}

}  // namespace scaletrain
