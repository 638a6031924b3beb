// DType: the element types a Tensor can hold (f32, bf16, f16, u8, i32, and i64/f64 for sample
// indices and device-side sums), their sizes and names.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "scaletrain/core/half.hpp"

namespace scaletrain {

enum class DType : uint8_t { f32, bf16, f16, u8, i32, i64, f64 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::f16: return 2;
    case DType::u8: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f64: return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f64: return "f64";
  }
  return "?";
}

// Parses "f32", "float32", "bf16", "bfloat16", "f16", "float16", "u8", "uint8", "i32", "int32", "i64",
// "int64", "f64", "float64";
// throws scaletrain::Error naming the accepted spellings otherwise.
DType parse_dtype(std::string_view name);

template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<bf16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<f16> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};

}  // namespace scaletrain
