// Activation functors: ReLU, ReLU6, SELU and GELU forward and backward (index i over all elements), templated
// over the storage type (float, bf16, f16) with float arithmetic.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/packs.hpp"

namespace scaletrain::kernels {

constexpr float kSeluAlpha = 1.6732632423543772f;
constexpr float kSeluScale = 1.0507009873554805f;

// e^x for x <= 0 without a libm call, so host loops vectorize: x = n ln2 + r with |r| <= ln2/2
// (two-part ln2), e^r by a degree-6 Taylor polynomial (relative error < 2e-7 on that range),
// times 2^n built in the exponent bits. Inputs below -87 give 0 (e^-87 is below FLT_MIN).
SCALETRAIN_INLINE float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : (x > 0.0f ? 0.0f : x);
  // Round to nearest by adding and subtracting 1.5 * 2^23 (no libm call; exact for |n| < 2^22).
  const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t scale_bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return x <= -87.0f ? 0.0f : p * bits_float(scale_bits);
}

// T is the storage type (float, bf16, f16); the arithmetic is float. Each functor runs on packs of
// elements (kernels/packs.hpp): pack<N>(i) over elements [i, i + N), operator()(i) one element.
// A forward functor maps x to y (Fn::apply(x) the activation); a gradient functor maps (a, dy) to dx,
// `a` being the activation's input or (the FromOutput forms) its output.
template <class T, class Fn>
struct ActivationForward {
  const T* x;
  T* y;
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float v[N];
    load_pack<T, N>(x + i, v);
    each_in_pack<N>([&](int k) { v[k] = Fn::apply(v[k]); });
    store_pack<T, N>(y + i, v);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return pack_aligned(x) && pack_aligned(y); }
};

struct ReluFn {
  SCALETRAIN_INLINE static float apply(float v) { return v > 0.0f ? v : 0.0f; }
};
// min(max(x, 0), 6), as torch.nn.ReLU6 (MobileNetV2).
struct Relu6Fn {
  SCALETRAIN_INLINE static float apply(float v) { return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f; }
};
struct SeluFn {
  SCALETRAIN_INLINE static float apply(float v) {
    const float neg = kSeluScale * kSeluAlpha * (exp_nonpositive(v) - 1.0f);
    return v > 0.0f ? kSeluScale * v : neg;
  }
};

// GELU in its exact form, x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, as torch.nn.GELU() (the ViT's MLP).
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
struct GeluFn {
  SCALETRAIN_INLINE static float apply(float v) { return 0.5f * v * (1.0f + erff(v * kInvSqrt2)); }
};

template <class T>
using ReluForward = ActivationForward<T, ReluFn>;
template <class T>
using Relu6Forward = ActivationForward<T, Relu6Fn>;
template <class T>
using SeluForward = ActivationForward<T, SeluFn>;
template <class T>
using GeluForward = ActivationForward<T, GeluFn>;

// dx = slope(a) * dy over packs, Slope::of(a) the activation's derivative from `a`.
template <class T, class Slope>
struct ActivationGradient {
  const T* a;
  const T* dy;
  T* dx;
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float av[N], g[N];
    load_pack<T, N>(a + i, av);
    load_pack<T, N>(dy + i, g);
    each_in_pack<N>([&](int k) { g[k] = Slope::apply(av[k], g[k]); });
    store_pack<T, N>(dx + i, g);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return pack_aligned(a) && pack_aligned(dy) && pack_aligned(dx); }
};

struct ReluSlope {  // from the input or the output alike: exact
  SCALETRAIN_INLINE static float apply(float a, float g) { return a > 0.0f ? g : 0.0f; }
};
// ReLU6's slope is 1 inside (0, 6) and 0 outside; the input is inside exactly where the output is,
// so the input's and the output's forms are one (at 0 and 6 themselves, 0, as PyTorch's hardtanh_backward).
struct Relu6Slope {
  SCALETRAIN_INLINE static float apply(float a, float g) { return a > 0.0f && a < 6.0f ? g : 0.0f; }
};
struct SeluSlopeFromInput {
  SCALETRAIN_INLINE static float apply(float x, float g) {
    const float slope = x > 0.0f ? kSeluScale : kSeluScale * kSeluAlpha * exp_nonpositive(x);
    return slope * g;
  }
};
// SELU's slope from its output y: for y <= 0 it is y + scale * alpha (= scale * alpha * e^x), whose
// error is y's rounding error, at most half an ulp of |y| < 1.76 (6e-8 in f32), where the input's
// form has e^x's relative error (PyTorch's elu_backward takes the same form with is_result = true).
// The FromOutput forms serve ops that keep only y (the cpu fused separable convolution).
struct SeluSlopeFromOutput {
  SCALETRAIN_INLINE static float apply(float y, float g) {
    const float slope = y > 0.0f ? kSeluScale : y + kSeluScale * kSeluAlpha;
    return slope * g;
  }
};

// GELU's slope from its input: Phi(x) + x phi(x). (From the output there is none: GELU is not monotonic.)
struct GeluSlope {
  SCALETRAIN_INLINE static float apply(float x, float g) {
    const float cdf = 0.5f * (1.0f + erff(x * kInvSqrt2));
    return g * (cdf + x * kInvSqrt2Pi * expf(-0.5f * x * x));
  }
};

template <class T>
using ReluBackward = ActivationGradient<T, ReluSlope>;
template <class T>
using Relu6Backward = ActivationGradient<T, Relu6Slope>;
template <class T>
using SeluBackward = ActivationGradient<T, SeluSlopeFromInput>;
template <class T>
using GeluBackward = ActivationGradient<T, GeluSlope>;
template <class T>
using ReluBackwardFromOutput = ActivationGradient<T, ReluSlope>;
template <class T>
using Relu6BackwardFromOutput = ActivationGradient<T, Relu6Slope>;
template <class T>
using SeluBackwardFromOutput = ActivationGradient<T, SeluSlopeFromOutput>;

}  // namespace scaletrain::kernels
