// Inner product on oneDNN's sgemm with every operand in its plain, user layout: y = x w^T + b,
// dx = dy w, dw = dy^T x, db = column sums of dy. Weights change every step in training, so the
// blocked weight layouts oneDNN's inner-product primitive prefers would cost a reorder of the
// weights (and one of their gradient) on every step; GEMM on plain layouts needs none. Also runs
// pointwise convolutions (pointwise_conv.cpp), whose NHWC activations are already [N*H*W, C].
// With many rows the forward transposes w first: oneDNN's sgemm runs x * wT ('N', 'N') faster than
// x * w^T ('N', 'T') at pointwise-convolution shapes (many rows), and 1x1 weights cost far less to
// transpose than that saves. A dense layer's few rows do not pay for its transposition.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <vector>

#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/backend/cpu/transpose.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cpu {
namespace {

// Rows from which the forward transposes the weights (a pointwise convolution's N*H*W, not a batch).
constexpr int64_t kTransposedForwardMinRows = 1024;

class GemmInnerProduct final : public InnerProductOp {
 public:
  explicit GemmInnerProduct(const InnerProductShape& s)
      : rows_(s.batch), in_(s.in_features), out_(s.out_features), s_(s) {
    ST_CHECK(rows_ > 0 && in_ > 0 && out_ > 0, "inner product needs positive sizes: ", s.to_string());
    ST_CHECK(s.dtype == DType::f32, "the sgemm inner product runs f32, not ", dtype_name(s.dtype), ": ", s.to_string());
  }
  // y[rows, out] = x[rows, in] * w[out, in]^T + b
  void forward(const void* xv, const void* wv, const float* b, void* yv) override {
    const float* x = static_cast<const float*>(xv);
    const float* w = static_cast<const float*>(wv);
    float* y = static_cast<float*>(yv);
    float beta = 0.0f;
    if (b && s_.bias) {
      for (int64_t r = 0; r < rows_; ++r) std::copy(b, b + out_, y + r * out_);
      beta = 1.0f;
    }
    if (rows_ < kTransposedForwardMinRows) {
      check(dnnl_sgemm('N', 'T', rows_, out_, in_, 1.0f, x, in_, w, in_, beta, y, out_), "forward");
      return;
    }
    wt_.resize(in_ * out_);
    transpose_matrix(w, out_, in_, wt_.data());
    check(dnnl_sgemm('N', 'N', rows_, out_, in_, 1.0f, x, in_, wt_.data(), out_, beta, y, out_), "forward");
  }
  // dx[rows, in] = dy[rows, out] * w[out, in]
  void backward_data(const void* dy, const void* w, void* dx) override {
    check(dnnl_sgemm('N', 'N', rows_, in_, out_, 1.0f, static_cast<const float*>(dy), out_,
                     static_cast<const float*>(w), in_, 0.0f, static_cast<float*>(dx), in_),
          "backward_data");
  }
  // dw[out, in] = dy^T[out, rows] * x[rows, in]; db[out] = column sums of dy.
  void backward_weights(const void* xv, const void* dyv, float* dw, float* db) override {
    const float* x = static_cast<const float*>(xv);
    const float* dy = static_cast<const float*>(dyv);
    check(dnnl_sgemm('T', 'N', out_, in_, rows_, 1.0f, dy, out_, x, in_, 0.0f, dw, in_), "backward_weights");
    if (!db || !s_.bias) return;
    std::fill(db, db + out_, 0.0f);
    for (int64_t r = 0; r < rows_; ++r) {
      const float* row = dy + r * out_;
      for (int64_t c = 0; c < out_; ++c) db[c] += row[c];
    }
  }

 private:
  void check(dnnl_status_t st, const char* what) const {
    ST_CHECK(st == dnnl_success, "oneDNN sgemm failed in the ", what, " of inner product ", s_.to_string(),
             " (status ", static_cast<int>(st), ")");
  }
  int64_t rows_, in_, out_;
  InnerProductShape s_;
  std::vector<float> wt_;  // [in, out]: w transposed, for the forward with many rows
};

}  // namespace

std::unique_ptr<InnerProductOp> make_gemm_inner_product(const InnerProductShape& s) {
  return std::make_unique<GemmInnerProduct>(s);
}

}  // namespace scaletrain::cpu
