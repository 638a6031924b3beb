// Tensor, DType and the bf16/f16 conversions: shapes, views, alignment, rounding, error messages.
#include <gtest/gtest.h>

#include <cmath>
#if defined(__F16C__)
#include <immintrin.h>
#endif
#include <cstdint>
#include <limits>

#include "scaletrain/core/dtype.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/tensor.hpp"

using namespace scaletrain;

TEST(Tensor, ShapeNumelBytesAndAlignment) {
  Tensor t({2, 28, 28, 3}, DType::f32);
  EXPECT_EQ(t.numel(), 2 * 28 * 28 * 3);
  EXPECT_EQ(t.bytes(), static_cast<size_t>(t.numel()) * 4);
  EXPECT_EQ(t.dim(-1), 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  EXPECT_EQ(shape_string(t.shape()), "[2, 28, 28, 3]");
}

TEST(Tensor, ViewSharesStorage) {
  Tensor t = Tensor::zeros({10}, DType::f32);
  Tensor v = t.view(4, {2, 3});
  v.data<float>()[0] = 7.0f;
  EXPECT_EQ(t.data<float>()[4], 7.0f);
  EXPECT_THROW(t.view(8, {3}), Error);
}

TEST(Tensor, WrongDTypeAccessNamesBothTypes) {
  Tensor t({4}, DType::u8);
  try {
    (void)t.data<float>();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dtype u8 accessed as f32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[rank "), std::string::npos) << e.what();
  }
}

TEST(Tensor, ReshapeChecksElementCount) {
  Tensor t({6}, DType::i32);
  EXPECT_EQ(t.reshape({2, 3}).dim(1), 3);
  EXPECT_THROW(t.reshape({4}), Error);
}

TEST(DType, ParseAndSizes) {
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(dtype_size(DType::f16), 2u);
  EXPECT_EQ(parse_dtype("float64"), DType::f64);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_THROW(parse_dtype("float128"), Error);
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1 + 2^-7: rounds to even (1.0)
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, F16RoundTripAndLimits) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604644775390625e-08f, 0.1f}) {
    float r = f16_to_float(float_to_f16(v));
    EXPECT_NEAR(r, v, std::abs(v) * 1e-3f + 1e-9f) << v;
  }
  EXPECT_TRUE(std::isinf(f16_to_float(float_to_f16(70000.0f))));
  EXPECT_EQ(f16_to_float(float_to_f16(1e-9f)), 0.0f);
  // halfway between 1 and 1 + 2^-10 rounds to even
  EXPECT_EQ(f16_to_float(float_to_f16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  // every finite f16 bit pattern survives f16 -> f32 -> f16
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    f16 h;
    h.bits = static_cast<uint16_t>(b);
    if (((b >> 10) & 0x1f) == 0x1f) continue;
    EXPECT_EQ(float_to_f16(f16_to_float(h)).bits, h.bits) << b;
  }
}

// The portable, branch-free conversions against the CPU's own (vcvtps2ph / vcvtph2ps, IEEE round to
// nearest even): every f16 pattern both ways, every tie and its neighbours between f16 values, and a
// strided sweep over all 2^32 float patterns.
TEST(Half, F16ConversionsMatchTheHardware) {
#if defined(__F16C__)
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    f16 h;
    h.bits = static_cast<uint16_t>(b);
    const float hw = _cvtsh_ss(static_cast<uint16_t>(b)), ours = f16_to_float(h);
    if (std::isnan(hw)) {
      EXPECT_TRUE(std::isnan(ours)) << b;
    } else {
      EXPECT_EQ(float_bits(ours), float_bits(hw)) << b;
    }
  }
  auto expect_same = [](uint32_t bits) {
    const float f = bits_float(bits);
    const uint16_t hw = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
    const uint16_t ours = float_to_f16(f).bits;
    if (std::isnan(f)) {
      EXPECT_EQ(ours & 0x7e00u, 0x7e00u) << bits;
    } else {
      ASSERT_EQ(ours, hw) << "float bits 0x" << std::hex << bits;
    }
  };
  for (uint32_t b = 0; b < 0x7c00u; ++b) {  // the midpoint after each finite f16 magnitude, +-1 ulp
    f16 h, next;
    h.bits = static_cast<uint16_t>(b);
    next.bits = static_cast<uint16_t>(b + 1);
    const uint32_t mid = float_bits(0.5f * (f16_to_float(h) + f16_to_float(next)));
    for (uint32_t m : {mid - 1, mid, mid + 1}) {
      expect_same(m);
      expect_same(m | 0x80000000u);
    }
  }
  for (uint64_t b = 0; b <= 0xffffffffull; b += 4099) expect_same(static_cast<uint32_t>(b));
#else
  GTEST_SKIP() << "this CPU has no F16C instructions to compare with";
#endif
}
