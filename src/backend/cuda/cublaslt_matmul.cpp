// The matmul family (backend/ops.hpp) on cuBLASLt: C = alpha op(A) op(B) (+ bias) (-> gelu) as one
// strided-batched cublasLtMatmul. Row-major C [m, n] is column-major C^T [n, m], so the call computes
// C^T = op(B)^T op(A)^T: B's stored rows are the first operand's columns (CUBLAS_OP_T where B is
// transposed), A the second. The bias (f32, over C's columns, the column-major rows) is the BIAS
// epilogue. The gelu epilogue is the product (with the bias epilogue or none) into aux, then the exact
// GELU as a kernel from aux to C. cuBLASLt's GELU_AUX epilogues are not used: cublasLt.h documents
// them as "GELU point-wise transform" without saying whether that is the erf form the family promises
// or the tanh approximation; they may come back once a GPU run shows them equal to the kernel. Algorithms are asked for twice: for operands aligned to 16 bytes
// (the caching allocator's buffers, head slices of whole matrices) and to their element size, which
// runs where a pointer or stride is not.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <type_traits>

#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/activation.hpp"

namespace scaletrain::cuda {
namespace {

template <auto Destroy>
struct Deleter {
  template <class P>
  void operator()(P* p) const noexcept {
    (void)Destroy(p);
  }
};
using Desc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, Deleter<cublasLtMatmulDescDestroy>>;
using Layout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, Deleter<cublasLtMatrixLayoutDestroy>>;
using Preference =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, Deleter<cublasLtMatmulPreferenceDestroy>>;

cudaDataType_t data_type(DType t) {
  return t == DType::bf16 ? CUDA_R_16BF : t == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
}

// A column-major [rows, cols] matrix of `batch` at `stride` elements apart.
Layout layout(DType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  ST_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, data_type(t), static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), ld));
  Layout out(l);
  const int32_t count = static_cast<int32_t>(batch);
  ST_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  ST_CUBLAS_CHECK(
      cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  return out;
}

struct Algorithm {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  int64_t workspace_bytes = 0;
};

class CublasLtMatmul final : public MatmulOp {
 public:
  CublasLtMatmul(CudaOpContext& ctx, const MatmulShape& s, cudaStream_t stream)
      : ctx_(ctx), s_(s), stream_(stream), who_(s.to_string()) {
    s.validate();
    ST_CHECK(s.epilogue != MatmulEpilogue::bias_gradient, "matmul ", who_,
             ": on cuda the bias gradient epilogue runs in a dense layer's weight gradient only (dW = dY^T X, one "
             "contiguous matrix: backend/inner_product_matmul.hpp), on the inner-product op's BGRADB");
    // cublasLt.h: "Bias vector elements are the same type as the elements of output matrix", so an f32
    // bias is documented for an f32 output only.
    ST_CHECK(!s.bias || s.out_dtype == DType::f32, "matmul ", who_,
             ": on cuda a bias needs an f32 output (cuBLASLt's bias is of the output's type); a dense layer's "
             "forward runs on the inner-product op, which stages it (backend/inner_product_matmul.hpp)");
    make_desc(s.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT);
    choose(ctx.workspace_limit(stream));
    ST_CHECK(vector_.found || element_.found, "cuBLASLt has no algorithm for ", who_);
    ctx.reserve_workspace(stream, std::max(vector_.workspace_bytes, element_.workspace_bytes), who_);
    set_implementation(std::string("cuBLASLt") + (s.epilogue == MatmulEpilogue::gelu ? ", GELU kernel" : ""));
  }

  void run(const void* a, const void* b, const float* bias, void* c, void* aux) override {
    const bool gelu = s_.epilogue == MatmulEpilogue::gelu;
    ST_CHECK(!gelu || aux != nullptr, "matmul ", who_, ": the gelu epilogue needs the aux buffer");
    ST_CHECK(!s_.bias || bias != nullptr, "matmul ", who_, ": the bias epilogue needs a bias pointer");
    if (s_.bias) set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias));
    void* d = gelu ? aux : c;
    const bool vector = vector_.found && aligned(a) && aligned(b) && aligned(c) && aligned(aux);
    ST_CHECK(vector || element_.found, "matmul ", who_, ": cuBLASLt has algorithms for 16-byte aligned operands only; "
             "pass buffers and strides aligned to 16 bytes");
    const Algorithm& use = vector ? vector_ : element_;
    const float alpha = s_.alpha, beta = 0.0f;
    ST_CUBLAS_CHECK(cublasLtMatmul(ctx_.cublaslt(), desc_.get(), &alpha, b, first_.get(), a, second_.get(), &beta, d,
                                   c_.get(), d, c_.get(), &use.algo, ctx_.workspace(stream_),
                                   static_cast<size_t>(use.workspace_bytes), stream_));
    if (gelu) gelu_kernel(aux, c);
  }

 private:
  template <class V>
  void set_desc(cublasLtMatmulDescAttributes_t attr, V value) {
    ST_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_.get(), attr, &value, sizeof(value)));
  }

  void make_desc(cublasLtEpilogue_t epilogue) {
    const MatmulShape& s = s_;
    cublasLtMatmulDesc_t d = nullptr;
    ST_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    desc_.reset(d);
    const int32_t op_first = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_second = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, op_first);
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, op_second);
    set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(epilogue));
    if (s.bias) set_desc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(CUDA_R_32F));
    // Column-major: B's stored matrix is [n, k] ([k, n] transposed), A's [k, m] ([m, k] transposed).
    first_ = s.trans_b ? layout(s.dtype, s.k, s.n, s.ldb_or(), s.batch, s.stride_b_or())
                       : layout(s.dtype, s.n, s.k, s.ldb_or(), s.batch, s.stride_b_or());
    second_ = s.trans_a ? layout(s.dtype, s.m, s.k, s.lda_or(), s.batch, s.stride_a_or())
                        : layout(s.dtype, s.k, s.m, s.lda_or(), s.batch, s.stride_a_or());
    c_ = layout(s.out_dtype, s.n, s.m, s.ldc_or(), s.batch, s.stride_c_or());
  }

  Algorithm heuristic(int64_t limit, uint32_t alignment) {
    cublasLtMatmulPreference_t p = nullptr;
    ST_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
    Preference pref(p);
    const uint64_t ws = static_cast<uint64_t>(limit);
    ST_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      ST_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attr, &alignment, sizeof(alignment)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx_.cublaslt(), desc_.get(), first_.get(), second_.get(),
                                                             c_.get(), c_.get(), p, 1, &result, &found);
    Algorithm a;
    if (st == CUBLAS_STATUS_SUCCESS && found > 0) {
      a.found = true;
      a.algo = result.algo;
      a.workspace_bytes = static_cast<int64_t>(result.workspaceSize);
    }
    return a;
  }

  void choose(int64_t limit) {
    vector_ = heuristic(limit, 16);
    element_ = heuristic(limit, static_cast<uint32_t>(dtype_size(s_.dtype)));
  }

  // Every batch stride and leading dimension a whole number of 16 bytes.
  bool strides_aligned() const {
    const int64_t e = static_cast<int64_t>(dtype_size(s_.dtype)), o = static_cast<int64_t>(dtype_size(s_.out_dtype));
    return (s_.lda_or() * e) % 16 == 0 && (s_.ldb_or() * e) % 16 == 0 && (s_.ldc_or() * o) % 16 == 0 &&
           (s_.stride_a_or() * e) % 16 == 0 && (s_.stride_b_or() * e) % 16 == 0 && (s_.stride_c_or() * o) % 16 == 0;
  }
  bool aligned(const void* p) const {
    return strides_aligned() && (p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0);
  }

  // The fallback epilogue: C = gelu(aux) over C's elements (contiguous rows; a padded C runs row by row
  // in the functor's index).
  void gelu_kernel(const void* pre, void* out) {
    const int64_t n = s_.n, ld = s_.ldc_or(), m = s_.m, sc = s_.stride_c_or(), rows = s_.batch * s_.m;
    visit_float_type(s_.out_dtype, [&](auto t) {
      using T = decltype(t);
      if (ld == n && sc == m * n) {
        ctx_.launch_elements(stream_, "matmul_gelu", rows * n,
                             kernels::GeluForward<T>{static_cast<const T*>(pre), static_cast<T*>(out)});
      } else {
        for (int64_t r = 0; r < rows; ++r) {  // padded rows: one launch per row (not on any model's path)
          const int64_t at = (r / m) * sc + (r % m) * ld;
          ctx_.launch(stream_, "matmul_gelu", n,
                      kernels::GeluForward<T>{static_cast<const T*>(pre) + at, static_cast<T*>(out) + at});
        }
      }
    });
  }

  CudaOpContext& ctx_;
  MatmulShape s_;
  cudaStream_t stream_;
  std::string who_;
  Desc desc_;
  Layout first_, second_, c_;
  Algorithm vector_, element_;
};

}  // namespace

std::unique_ptr<MatmulOp> make_cublaslt_matmul(CudaOpContext& ctx, const MatmulShape& shape, cudaStream_t stream) {
  return std::make_unique<CublasLtMatmul>(ctx, shape, stream);
}

}  // namespace scaletrain::cuda
