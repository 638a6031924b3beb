// The matmul family on the CPU: one oneDNN matmul primitive per shape, its operands described by the
// shape's strides (a 3-D [batch, rows, cols] memory; a transpose is the swapped strides, never a copy),
// alpha as the primitive's output scale and the bias as its [1, 1, n] bias. Storage the CPU has no
// kernels for (f16; bf16 without AVX512-BF16) is widened to f32 copies, multiplied in f32 and rounded
// once. The gelu epilogue is a host pass after the product: the matmul writes the pre-activation into
// aux, which backward needs anyway, and C = gelu(aux). The bias gradient is a host pass over A.
#include <algorithm>
#include <unordered_map>

#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/check_dnnl.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/launch.hpp"

namespace scaletrain::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;

// The elements from a matrix batch's first to its last, with `rows` rows of `cols` at leading
// dimension ld (transposed: the stored rows are the columns).
int64_t extent(int64_t batch, int64_t stride, int64_t stored_rows, int64_t ld, int64_t stored_cols) {
  return (batch - 1) * stride + (stored_rows - 1) * ld + stored_cols;
}

class OneDnnMatmul final : public MatmulOp {
 public:
  OneDnnMatmul(OneDnnContextPtr ctx, const MatmulShape& s, bool native_bf16) : ctx_(std::move(ctx)), s_(s) {
    s.validate();
    ST_CHECK(!(s.bias && s.alpha != 1.0f), "matmul ", s.to_string(),
             ": a bias with alpha != 1 is not supported (scale the bias instead)");
    emulated_ = s.dtype == DType::f16 || (s.dtype == DType::bf16 && !native_bf16);
    try {
      build();
    } catch (const dnnl::error& e) {
      ST_FAIL("oneDNN cannot create the matmul ", s.to_string(), ": ", e.what());
    }
    set_implementation(emulated_ ? "oneDNN matmul (f32 on widened " + std::string(dtype_name(s.dtype)) + ")"
                                 : "oneDNN matmul");
  }

  void run(const void* a, const void* b, const float* bias, void* c, void* aux) override {
    ST_CHECK(s_.epilogue == MatmulEpilogue::none || aux != nullptr, "matmul ", s_.to_string(), ": the ",
             matmul_epilogue_name(s_.epilogue), " epilogue needs the aux buffer");
    void* product = s_.epilogue == MatmulEpilogue::gelu ? aux : c;
    if (emulated_) {
      widen(a, a_wide_, a_extent_);
      widen(b, b_wide_, b_extent_);
      run_primitive(a_wide_.raw(), b_wide_.raw(), bias, c_wide_.raw());
      narrow(c_wide_.data<float>(), product);
    } else {
      run_primitive(a, b, bias, product);
    }
    if (s_.epilogue == MatmulEpilogue::gelu) apply_gelu(aux, c);
    if (s_.epilogue == MatmulEpilogue::bias_gradient) sum_over_k(a, static_cast<float*>(aux));
  }

 private:
  void build() {
    const MatmulShape& s = s_;
    const dt in = emulated_ ? dt::f32 : onednn_type(s.dtype), out = emulated_ ? dt::f32 : onednn_type(s.out_dtype);
    const memory::dims a_strides = s.trans_a ? memory::dims{s.stride_a_or(), 1, s.lda_or()}
                                             : memory::dims{s.stride_a_or(), s.lda_or(), 1};
    const memory::dims b_strides = s.trans_b ? memory::dims{s.stride_b_or(), 1, s.ldb_or()}
                                             : memory::dims{s.stride_b_or(), s.ldb_or(), 1};
    const memory::desc a({s.batch, s.m, s.k}, in, a_strides), b({s.batch, s.k, s.n}, in, b_strides);
    const memory::desc c({s.batch, s.m, s.n}, out, memory::dims{s.stride_c_or(), s.ldc_or(), 1});
    const memory::desc bias = s.bias ? memory::desc({1, 1, s.n}, dt::f32, memory::dims{s.n, s.n, 1}) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, bias, c), attr, ctx_->engine);
    a_ = unbound_memory(a, ctx_->engine);
    b_ = unbound_memory(b, ctx_->engine);
    c_ = unbound_memory(c, ctx_->engine);
    scratch_ = host_bytes(pd.scratchpad_desc().get_size());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a_},
                                         {DNNL_ARG_WEIGHTS, b_},
                                         {DNNL_ARG_DST, c_},
                                         {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), ctx_->engine, scratch_.raw())}};
    if (s.bias) {
      bias_ = unbound_memory(bias, ctx_->engine);
      args[DNNL_ARG_BIAS] = bias_;
    }
    call_ = PrimitiveCall(dnnl::matmul(pd), args);
    if (emulated_) {
      a_extent_ = s.trans_a ? extent(s.batch, s.stride_a_or(), s.k, s.lda_or(), s.m)
                            : extent(s.batch, s.stride_a_or(), s.m, s.lda_or(), s.k);
      b_extent_ = s.trans_b ? extent(s.batch, s.stride_b_or(), s.n, s.ldb_or(), s.k)
                            : extent(s.batch, s.stride_b_or(), s.k, s.ldb_or(), s.n);
      a_wide_ = Tensor({a_extent_}, DType::f32, "matmul.a_f32");
      b_wide_ = Tensor({b_extent_}, DType::f32, "matmul.b_f32");
      c_wide_ = Tensor({extent(s.batch, s.stride_c_or(), s.m, s.ldc_or(), s.n)}, DType::f32, "matmul.c_f32");
    }
  }

  void run_primitive(const void* a, const void* b, const float* bias, void* c) {
    a_.set_data_handle(const_cast<void*>(a));
    b_.set_data_handle(const_cast<void*>(b));
    c_.set_data_handle(c);
    if (s_.bias) bias_.set_data_handle(const_cast<float*>(bias));
    call_.run(ctx_->stream);
    ctx_->stream.wait();
  }

  // The f32 copies of an operand's whole extent (the gaps between its rows come along).
  void widen(const void* x, Tensor& wide, int64_t n) {
    visit_float_type(s_.dtype, [&](auto t) {
      using T = decltype(t);
      const T* src = static_cast<const T*>(x);
      float* dst = wide.data<float>();
      kernels::launch_host("matmul_widen", n, [=](int64_t i) { dst[i] = to_float(src[i]); });
    });
  }

  // C's elements (only those: ldc's gaps stay as they were) rounded to the output type.
  void narrow(const float* wide, void* out) {
    const int64_t rows = s_.batch * s_.m, n = s_.n, ld = s_.ldc_or(), sc = s_.stride_c_or(), m = s_.m;
    visit_float_type(s_.out_dtype, [&](auto t) {
      using T = decltype(t);
      T* dst = static_cast<T*>(out);
      kernels::launch_host("matmul_narrow", rows, [=](int64_t r) {
        const int64_t at = (r / m) * sc + (r % m) * ld;
        for (int64_t j = 0; j < n; ++j) dst[at + j] = from_float<T>(wide[at + j]);
      });
    });
  }

  void apply_gelu(const void* pre, void* y) {
    const int64_t rows = s_.batch * s_.m, n = s_.n, ld = s_.ldc_or(), sc = s_.stride_c_or(), m = s_.m;
    visit_float_type(s_.out_dtype, [&](auto t) {
      using T = decltype(t);
      const T* x = static_cast<const T*>(pre);
      T* out = static_cast<T*>(y);
      kernels::launch_host("matmul_gelu", rows, [=](int64_t r) {
        const int64_t at = (r / m) * sc + (r % m) * ld;
        for (int64_t j = 0; j < n; ++j) out[at + j] = from_float<T>(kernels::GeluFn::apply(to_float(x[at + j])));
      });
    });
  }

  // sums[i] = the sum over k of op(A)[i, k], in f32 (one matrix: validate allows no batch).
  void sum_over_k(const void* a, float* sums) {
    const int64_t k = s_.k, ld = s_.lda_or();
    const bool trans = s_.trans_a;
    visit_float_type(s_.dtype, [&](auto t) {
      using T = decltype(t);
      const T* x = static_cast<const T*>(a);
      kernels::launch_host("matmul_bias_gradient", s_.m, [=](int64_t i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < k; ++j) sum += to_float(trans ? x[j * ld + i] : x[i * ld + j]);
        sums[i] = sum;
      });
    });
  }

  OneDnnContextPtr ctx_;
  MatmulShape s_;
  bool emulated_ = false;
  memory a_, b_, c_, bias_;
  Tensor scratch_;
  PrimitiveCall call_;
  int64_t a_extent_ = 0, b_extent_ = 0;
  Tensor a_wide_, b_wide_, c_wide_;
};

}  // namespace

std::unique_ptr<MatmulOp> make_onednn_matmul(OneDnnContextPtr ctx, const MatmulShape& s, bool native_bf16) {
  return std::make_unique<OneDnnMatmul>(std::move(ctx), s, native_bf16);
}

}  // namespace scaletrain::cpu
