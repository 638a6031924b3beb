// DType parsing.
#include "scaletrain/core/dtype.hpp"

#include "scaletrain/core/error.hpp"

namespace scaletrain {

DType parse_dtype(std::string_view n) {
  if (n == "f32" || n == "float32" || n == "fp32") return DType::f32;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "f16" || n == "float16" || n == "fp16") return DType::f16;
  if (n == "u8" || n == "uint8") return DType::u8;
  if (n == "i32" || n == "int32") return DType::i32;
  if (n == "i64" || n == "int64") return DType::i64;
  if (n == "f64" || n == "float64") return DType::f64;
  ST_FAIL("unknown dtype '", n, "' (expected one of f32, bf16, f16, u8, i32, i64, f64)");
}

}  // namespace scaletrain
