// Emulated low precision: an f32 operator run on bf16 or f16 storage. Inputs (x, w, dy) are widened
// into f32 buffers the op owns, the f32 operator runs, and its outputs (y, dx) are rounded back to
// the storage type: "f32 compute, rounded at layer boundaries". Used for f16 on every CPU (oneDNN
// 2.6 has no f16 kernels for x86 without AVX512-FP16) and for bf16 where the CPU has no bf16
// instructions; Backend::precision_support reports which.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "scaletrain/backend/cpu/instruction_rates.hpp"
#include "scaletrain/backend/cpu/emulated_ops.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"

namespace scaletrain::cpu {
namespace {

// f16 <-> f32 with AVX-512's vcvtph2ps / vcvtps2ph (round to nearest even, IEEE overflow and
// subnormals, as float_to_f16): the portable conversion's branches do not vectorize and made the
// emulated f16 step several times slower than f32. Returns the elements converted (a multiple of 16).
__attribute__((target("avx512f"))) int64_t widen_f16_avx512(const f16* s, float* d, int64_t n) {
  const int64_t full = n / 16 * 16;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < full; i += 16)
    _mm512_storeu_ps(d + i, _mm512_mask_cvtph_ps(_mm512_setzero_ps(), 0xFFFF,
                                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
  return full;
}

__attribute__((target("avx512f"))) int64_t narrow_f16_avx512(const float* s, f16* d, int64_t n) {
  const int64_t full = n / 16 * 16;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < full; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm512_mask_cvtps_ph(_mm256_setzero_si256(), 0xFFFF, _mm512_loadu_ps(s + i),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  return full;
}

template <class T>
void widen(const void* src, Tensor& dst, int64_t n) {
  const T* s = static_cast<const T*>(src);
  float* d = dst.data<float>();
  int64_t done = 0;
  if constexpr (std::is_same_v<T, f16>)
    if (have_avx512f()) done = widen_f16_avx512(s, d, n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = done; i < n; ++i) d[i] = to_float(s[i]);
}

template <class T>
void narrow(const Tensor& src, void* dst, int64_t n) {
  const float* s = src.data<float>();
  T* d = static_cast<T*>(dst);
  int64_t done = 0;
  if constexpr (std::is_same_v<T, f16>)
    if (have_avx512f()) done = narrow_f16_avx512(s, d, n);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = done; i < n; ++i) d[i] = from_float<T>(s[i]);
}

Tensor f32_buffer(int64_t n, const char* what) { return Tensor({std::max<int64_t>(n, 1)}, DType::f32, what); }

// Convolution and inner product share this shape of interface: x, w, y and their gradients.
template <class T, class Op>
class EmulatedWeightedOp final : public Op {
 public:
  EmulatedWeightedOp(std::unique_ptr<Op> f32_op, int64_t x_elems, int64_t w_elems, int64_t y_elems)
      : op_(std::move(f32_op)), nx_(x_elems), nw_(w_elems), ny_(y_elems) {
    x_ = f32_buffer(nx_, "emulated.x");
    w_ = f32_buffer(nw_, "emulated.w");
    y_ = f32_buffer(ny_, "emulated.y");
  }
  void forward(const void* x, const void* w, const float* b, void* y) override {
    widen<T>(x, x_, nx_);
    widen<T>(w, w_, nw_);
    op_->forward(x_.raw(), w_.raw(), b, y_.raw());
    narrow<T>(y_, y, ny_);
  }
  void backward_data(const void* dy, const void* w, void* dx) override {
    widen<T>(dy, y_, ny_);
    widen<T>(w, w_, nw_);
    op_->backward_data(y_.raw(), w_.raw(), x_.raw());
    narrow<T>(x_, dx, nx_);
  }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    widen<T>(x, x_, nx_);
    widen<T>(dy, y_, ny_);
    op_->backward_weights(x_.raw(), y_.raw(), dw, db);
  }

 private:
  std::unique_ptr<Op> op_;
  int64_t nx_, nw_, ny_;
  Tensor x_, w_, y_;
};

template <class T>
class EmulatedPool final : public PoolOp {
 public:
  EmulatedPool(std::unique_ptr<PoolOp> f32_op, int64_t x_elems, int64_t y_elems)
      : op_(std::move(f32_op)), nx_(x_elems), ny_(y_elems) {
    x_ = f32_buffer(nx_, "emulated.x");
    y_ = f32_buffer(ny_, "emulated.y");
  }
  void forward(const void* x, void* y, bool training) override {
    widen<T>(x, x_, nx_);
    op_->forward(x_.raw(), y_.raw(), training);
    narrow<T>(y_, y, ny_);
  }
  void backward(const void* dy, void* dx) override {
    widen<T>(dy, y_, ny_);
    op_->backward(y_.raw(), x_.raw());
    narrow<T>(x_, dx, nx_);
  }

 private:
  std::unique_ptr<PoolOp> op_;
  int64_t nx_, ny_;
  Tensor x_, y_;
};

}  // namespace

std::unique_ptr<ConvOp> make_emulated_conv(std::unique_ptr<ConvOp> f32_op, const ConvShape& s) {
  const int64_t nx = s.batch * s.in_h * s.in_w * s.in_c, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
  const int64_t nw = s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w;
  if (s.dtype == DType::bf16) return std::make_unique<EmulatedWeightedOp<bf16, ConvOp>>(std::move(f32_op), nx, nw, ny);
  ST_CHECK(s.dtype == DType::f16, "emulated convolution ", s.to_string(), ": storage must be bf16 or f16");
  return std::make_unique<EmulatedWeightedOp<f16, ConvOp>>(std::move(f32_op), nx, nw, ny);
}

std::unique_ptr<InnerProductOp> make_emulated_inner_product(std::unique_ptr<InnerProductOp> f32_op,
                                                            const InnerProductShape& s) {
  const int64_t nx = s.batch * s.in_features, ny = s.batch * s.out_features, nw = s.in_features * s.out_features;
  if (s.dtype == DType::bf16)
    return std::make_unique<EmulatedWeightedOp<bf16, InnerProductOp>>(std::move(f32_op), nx, nw, ny);
  ST_CHECK(s.dtype == DType::f16, "emulated inner product ", s.to_string(), ": storage must be bf16 or f16");
  return std::make_unique<EmulatedWeightedOp<f16, InnerProductOp>>(std::move(f32_op), nx, nw, ny);
}

std::unique_ptr<PoolOp> make_emulated_pool(std::unique_ptr<PoolOp> f32_op, const PoolShape& s) {
  const int64_t nx = s.batch * s.in_h * s.in_w * s.channels, ny = s.batch * s.out_h() * s.out_w() * s.channels;
  if (s.dtype == DType::bf16) return std::make_unique<EmulatedPool<bf16>>(std::move(f32_op), nx, ny);
  ST_CHECK(s.dtype == DType::f16, "emulated pooling ", s.to_string(), ": storage must be bf16 or f16");
  return std::make_unique<EmulatedPool<f16>>(std::move(f32_op), nx, ny);
}

}  // namespace scaletrain::cpu
