// Inner product in bf16 on oneDNN's matmul primitive with every operand in its plain, user layout
// (oneDNN 2.6 has no public bf16 GEMM): y = x w^T + b, dx = dy w, dw = dy^T x (the transposes are
// strides, not copies), db = column sums of dy. Weights change every step, so plain layouts avoid
// the per-step weight reorders of the inner-product primitive, as the f32 sgemm path does. bf16
// operands, f32 accumulation; the bias, dw and db are f32. Also runs bf16 pointwise convolutions. With
// an activation, the forward applies it as a oneDNN post-op to the f32 result before its one rounding
// to bf16 (SELU as scale * elu(alpha)), so no separate pass reads and writes y.
#include <omp.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/check_dnnl.hpp"
#include "scaletrain/core/half.hpp"

namespace scaletrain::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// One matmul c[M,N] = a[M,K] b[K,N] (+ bias[1,N]) with its arguments bound once.
class BoundMatmul {
 public:
  BoundMatmul() = default;
  BoundMatmul(const dnnl::engine& eng, const memory::desc& a, const memory::desc& b, const memory::desc& bias,
              const memory::desc& c, const dnnl::post_ops& post_ops = dnnl::post_ops()) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(post_ops);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, bias, c), attr, eng);
    a_ = unbound_memory(a, eng);
    b_ = unbound_memory(b, eng);
    c_ = unbound_memory(c, eng);
    scratch_ = host_bytes(pd.scratchpad_desc().get_size());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a_},
                                         {DNNL_ARG_WEIGHTS, b_},
                                         {DNNL_ARG_DST, c_},
                                         {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), eng, scratch_.raw())}};
    if (!bias.is_zero()) {
      bias_ = unbound_memory(bias, eng);
      args[DNNL_ARG_BIAS] = bias_;
    }
    call_ = PrimitiveCall(dnnl::matmul(pd), args);
  }
  void run(dnnl::stream& s, const void* a, const void* b, const float* bias, void* c) {
    a_.set_data_handle(const_cast<void*>(a));
    b_.set_data_handle(const_cast<void*>(b));
    c_.set_data_handle(c);
    if (bias) bias_.set_data_handle(const_cast<float*>(bias));
    call_.run(s);
    s.wait();
  }

 private:
  memory a_, b_, c_, bias_;
  Tensor scratch_;
  PrimitiveCall call_;
};

class MatmulInnerProduct final : public InnerProductOp {
 public:
  MatmulInnerProduct(OneDnnContextPtr ctx, const InnerProductShape& s, Activation act)
      : ctx_(std::move(ctx)), s_(s), act_(act) {
    ST_CHECK(s.batch > 0 && s.in_features > 0 && s.out_features > 0, "invalid inner product ", s.to_string(),
             ": batch, in and out features must be positive");
    ST_CHECK(s.dtype == DType::bf16, "the matmul inner product runs bf16, not ", dtype_name(s.dtype), ": ",
             s.to_string());
    try {
      build();
    } catch (const dnnl::error& e) {
      ST_FAIL("oneDNN cannot create the bf16 matmuls of inner product ", s.to_string(), ": ", e.what());
    }
  }

  void forward(const void* x, const void* w, const float* b, void* y) override {
    forward_.run(ctx_->stream, x, w, s_.bias ? b : nullptr, y);
  }
  void backward_data(const void* dy, const void* w, void* dx) override {
    backward_data_.run(ctx_->stream, dy, w, nullptr, dx);
  }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    backward_weights_.run(ctx_->stream, dy, x, nullptr, dw);
    if (db && s_.bias) column_sums(static_cast<const bf16*>(dy), db);
  }

 private:
  void build() {
    const memory::dim rows = s_.batch, in = s_.in_features, out = s_.out_features;
    auto& eng = ctx_->engine;
    const memory::desc x({rows, in}, dt::bf16, tag::ab), dy({rows, out}, dt::bf16, tag::ab);
    const memory::desc y({rows, out}, dt::bf16, tag::ab), dx({rows, in}, dt::bf16, tag::ab);
    const memory::desc w_t({in, out}, dt::bf16, tag::ba);  // w[out, in] read as w^T
    const memory::desc w({out, in}, dt::bf16, tag::ab);
    const memory::desc dy_t({out, rows}, dt::bf16, tag::ba);  // dy[rows, out] read as dy^T
    const memory::desc dw({out, in}, dt::f32, tag::ab);
    const memory::desc bias = s_.bias ? memory::desc({1, out}, dt::f32, tag::ab) : memory::desc();
    forward_ = BoundMatmul(eng, x, w_t, bias, y, activation_post_ops(act_));
    backward_data_ = BoundMatmul(eng, dy, w, memory::desc(), dx);
    backward_weights_ = BoundMatmul(eng, dy_t, x, memory::desc(), dw);
  }

  // db[c] = sum over rows of dy[r, c], in f32, in one pass over dy: each thread sums a run of rows
  // into its own partial sums, which are then added in thread order. (Column blocks of 16 over all
  // rows read dy once per block: one pass over dy per 16 columns, which for a pointwise layer on a
  // large image goes to memory every time.)
  void column_sums(const bf16* dy, float* db) {
    const int64_t rows = s_.batch, cols = s_.out_features;
    const int threads = std::max(1, omp_get_max_threads());
    partial_sums_.assign(threads * cols, 0.0f);
#pragma omp parallel num_threads(threads)
    {
      float* acc = partial_sums_.data() + omp_get_thread_num() * cols;
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const bf16* row = dy + r * cols;
#pragma omp simd
        for (int64_t c = 0; c < cols; ++c) acc[c] += bf16_to_float(row[c]);
      }
    }
    std::copy(partial_sums_.begin(), partial_sums_.begin() + cols, db);
    for (int th = 1; th < threads; ++th)
      for (int64_t c = 0; c < cols; ++c) db[c] += partial_sums_[th * cols + c];
  }

  OneDnnContextPtr ctx_;
  InnerProductShape s_;
  Activation act_;
  BoundMatmul forward_, backward_data_, backward_weights_;
  std::vector<float> partial_sums_;  // [threads, out_features]: column_sums' per-thread sums
};

}  // namespace

std::unique_ptr<InnerProductOp> make_matmul_inner_product(OneDnnContextPtr ctx, const InnerProductShape& s,
                                                          Activation act) {
  return std::make_unique<MatmulInnerProduct>(std::move(ctx), s, act);
}

}  // namespace scaletrain::cpu
