// Inner product (dense layer) on cuBLASLt: one cublasLtMatmul per direction, with its descriptors,
// layouts and algorithms made once per shape at op creation from the pure GEMM plans of
// backend/gemm_plan.hpp (row-major [rows, features] data read column-major, transposes as op flags,
// no copies; CPU-tested in tests/test_backend_gemm_plan.cpp). Only the pointers change per call.
//
// Decisions, with what the cuBLAS 13.1 documentation says (cublasLt.h as installed, and the cuBLAS
// guide's "Results reproducibility" and cublasLtMatmul sections):
// - Types. f32: CUBLAS_COMPUTE_32F (no TF32), or CUBLAS_COMPUTE_32F_FAST_TF32 when allow_tf32.
//   bf16/f16: CUBLAS_COMPUTE_32F with scale type f32, A/B in the storage type (tensor cores, f32
//   accumulation); y and dx in the storage type, dw in f32 (A/B 16BF or 16F with C/D 32F and compute
//   32F is one of cublasLtMatmul's listed combinations, as it is for cublasGemmEx).
// - Forward bias. CUBLASLT_EPILOGUE_BIAS with CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE set. The header
//   documents the bias type: "Bias vector elements are the same type as the elements of output
//   matrix (Dtype)", the only exceptions being IMMA (int8) and fp8 kernels. So an f32 bias is
//   documented for f32 output only. For bf16/f16 the op casts its f32 bias to the storage type
//   (kernels::Cast over `out` elements, into a 256-byte aligned slice behind the algorithm's
//   workspace) and lets the epilogue add it: one tiny kernel instead of a second pass over y
//   (kernels::BiasAddStored), and still one rounding of y; the bias itself is rounded to bf16/f16.
//   Bias epilogues are documented unsupported with CUBLASLT_ORDER_ROW, hence column-major layouts.
// - Bias gradient. CUBLASLT_EPILOGUE_BGRADB: dy is GEMM operand B, D = dw^T has `out` columns and k
//   is the batch, which is what BGRADB reduces. The header documents the bias-gradient elements as
//   "the same type as the output elements (Ctype)", here f32 (dw), which is the type db must have.
//   Which (type, transpose) combinations accept BGRADB is not listed, so support is asked of
//   cuBLASLt itself: when its heuristic returns no algorithm with BGRADB (for either alignment
//   variant below), the op uses CUBLASLT_EPILOGUE_DEFAULT and kernels::BiasGradStored<T> (rows
//   summed in order, f32), and says so in its log line.
// - Determinism (settings().deterministic, the default). CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK
//   = CUBLASLT_REDUCTION_SCHEME_NONE: "No reduction scheme, dot-product shall be performed in one
//   sequence", i.e. no split-K; the choice policy also rejects any result with SPLITK_NUM > 1. The
//   other schemes split K: INPLACE reduces "in place - using the output buffer ... and counters (in
//   workspace) to guarantee the sequentiality", COMPUTE_TYPE / OUTPUT_TYPE store partials in the
//   workspace and reduce them "in a separate step"; the header calls none of them nondeterministic,
//   and the guide's general guarantee is that a cuBLAS routine gives bit-wise identical results run
//   to run for one toolkit version on GPUs of the same architecture and SM count (with one active
//   stream, or, for cublasLtMatmul, a user-owned workspace, as here). Not across toolkit versions or
//   GPU models. NONE is the strictest reading; INPLACE would be the first to allow if split-K is
//   ever needed for tall-skinny backward_weights (k = batch) and measured deterministic. The
//   algorithm is fixed per shape at creation, so every step runs the same kernel. Not deterministic
//   mode: every reduction scheme is allowed.
// - Workspace. CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = the context's limit less the staged bias;
//   the chosen algorithms' largest need plus the staged bias is reserved on the op's stream.
// - Alignment. CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES default to 256. Activations come
//   whole from the allocator, but w, b, dw and db are views into flat parameter and gradient buffers
//   at any element offset (nn/model.cpp), aligned to their element size only. Each GEMM therefore
//   gets two algorithms at creation: one allowed to assume 16-byte alignment of every pointer
//   (128-bit loads, TMA) and one assuming only the element size (the bias pointer, which the
//   heuristic reads only for its alignment, is given a representative value); each call takes the
//   first when its pointers allow it.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/backend/gemm_plan.hpp"
#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/launch_cuda.hpp"

namespace scaletrain::cuda {
namespace {

using gemm::AlignmentVariant;

static_assert(gemm::reduction::none == static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_NONE));
static_assert(gemm::reduction::inplace == static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_INPLACE));
static_assert(gemm::reduction::compute_type == static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
static_assert(gemm::reduction::output_type == static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE));
static_assert(gemm::reduction::all == static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_MASK));

constexpr int kRequestedAlgorithms = 8;

int32_t cuda_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
    default:
      ST_FAIL("cuBLASLt inner product: no CUDA data type for ", dtype_name(t));
  }
}

cublasComputeType_t cublas_compute(gemm::ComputeType c) {
  return c == gemm::ComputeType::f32_fast_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

int32_t cublas_op(gemm::Transpose t) { return t == gemm::Transpose::none ? CUBLAS_OP_N : CUBLAS_OP_T; }

uint32_t cublas_epilogue(gemm::Epilogue e) {
  switch (e) {
    case gemm::Epilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case gemm::Epilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case gemm::Epilogue::bias_grad_b:
      return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

template <auto Destroy>
struct LtDeleter {
  template <class P>
  void operator()(P* p) const noexcept {
    (void)Destroy(p);
  }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, LtDeleter<cublasLtMatmulDescDestroy>>;
using MatrixLayout =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LtDeleter<cublasLtMatrixLayoutDestroy>>;
using MatmulPreference =
    std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, LtDeleter<cublasLtMatmulPreferenceDestroy>>;

MatrixLayout make_layout(const gemm::Matrix& m) {
  cublasLtMatrixLayout_t layout = nullptr;
  ST_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, static_cast<cudaDataType_t>(cuda_type(m.type)),
                                             static_cast<uint64_t>(m.rows), static_cast<uint64_t>(m.cols), m.ld));
  return MatrixLayout(layout);
}

template <class V>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, V value) {
  ST_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// An algorithm cuBLASLt's heuristic returned, and its place in the list (fastest first).
struct AlgoChoice {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  int64_t workspace_bytes = 0;
  int index = -1;
};

// Heuristic results by device and gemm::heuristic_key, so that equal GEMMs (a shape made again, the
// same dense layer twice) ask cuBLASLt once per process.
std::mutex& cache_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, AlgoChoice>& heuristic_cache() {
  static std::map<std::string, AlgoChoice> cache;
  return cache;
}

// One direction's matmul: its descriptors and one algorithm per alignment variant.
class LtGemm {
 public:
  LtGemm(CudaOpContext& ctx, const gemm::GemmPlan& plan, uint32_t reduction_mask, int64_t max_workspace)
      : plan_(plan), a_(make_layout(plan.a)), b_(make_layout(plan.b)), d_(make_layout(plan.d)) {
    cublasLtMatmulDesc_t desc = nullptr;
    ST_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, cublas_compute(plan.compute),
                                             static_cast<cudaDataType_t>(cuda_type(plan.scale_type))));
    desc_.reset(desc);
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, cublas_op(plan.transa));
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, cublas_op(plan.transb));
    set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, cublas_epilogue(plan.epilogue));
    if (plan.epilogue != gemm::Epilogue::none) set_desc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(plan.bias_type));
    for (AlignmentVariant v : {AlignmentVariant::vector, AlignmentVariant::element})
      choice_[index(v)] = heuristic(ctx, v, reduction_mask, max_workspace);
  }

  const gemm::GemmPlan& plan() const { return plan_; }
  const AlgoChoice& choice(AlignmentVariant v) const { return choice_[index(v)]; }
  // An algorithm for pointers of any alignment (the element variant runs aligned pointers too).
  bool runs_any_pointers() const { return choice(AlignmentVariant::element).found; }
  bool runs_some_pointers() const { return choice(AlignmentVariant::vector).found || runs_any_pointers(); }
  int64_t workspace_bytes() const {
    int64_t ws = 0;
    for (const AlgoChoice& c : choice_)
      if (c.found) ws = std::max(ws, c.workspace_bytes);
    return ws;
  }

  // D = op(A) op(B) (+ the epilogue on `bias`: the bias, or the bias gradient it writes), on `stream`.
  void run(cublasLtHandle_t handle, const void* a, const void* b, void* d, const void* bias, void* workspace,
           int64_t workspace_bytes, cudaStream_t stream, const std::string& who) {
    const AlignmentVariant v = gemm::variant_for({a, b, d, bias});
    const AlgoChoice* c = &choice(v);
    if (!c->found) c = &choice(AlignmentVariant::element);
    ST_CHECK(c->found, who, ": cuBLASLt gave no algorithm for pointers aligned to their element size only (",
             plan_.to_string(), "); pass buffers aligned to ", gemm::kVectorAlignment, " bytes");
    ST_CHECK(workspace_bytes >= c->workspace_bytes, who, ": the stream's workspace has ", workspace_bytes,
             " bytes, the algorithm needs ", c->workspace_bytes);
    if (plan_.epilogue != gemm::Epilogue::none) {
      ST_CHECK(bias != nullptr, who, ": the ", plan_.label(), " epilogue needs a bias pointer");
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    }
    const float alpha = 1.0f, beta = 0.0f;
    ST_CUBLAS_CHECK(cublasLtMatmul(handle, desc_.get(), &alpha, a, a_.get(), b, b_.get(), &beta, d, d_.get(), d,
                                   d_.get(), &c->algo, c->workspace_bytes > 0 ? workspace : nullptr,
                                   static_cast<size_t>(c->workspace_bytes), stream));
  }

 private:
  static int index(AlignmentVariant v) { return v == AlignmentVariant::vector ? 0 : 1; }

  template <class V>
  void set_desc(cublasLtMatmulDescAttributes_t attr, V value) {
    ST_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc_.get(), attr, &value, sizeof(value)));
  }

  AlgoChoice heuristic(CudaOpContext& ctx, AlignmentVariant v, uint32_t reduction_mask, int64_t max_workspace) {
    const std::string key =
        "device " + std::to_string(ctx.device()) + "|" + gemm::heuristic_key(plan_, reduction_mask, max_workspace, v);
    std::lock_guard lock(cache_mutex());
    if (auto it = heuristic_cache().find(key); it != heuristic_cache().end()) return it->second;

    cublasLtMatmulPreference_t raw_pref = nullptr;
    ST_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref));
    const MatmulPreference pref(raw_pref);
    set_pref(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(max_workspace));
    set_pref(pref.get(), CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reduction_mask);
    const auto align = [&](DType t) { return static_cast<uint32_t>(gemm::min_alignment(t, v)); };
    set_pref(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align(plan_.a.type));
    set_pref(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align(plan_.b.type));
    set_pref(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align(plan_.d.type));
    set_pref(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align(plan_.d.type));
    // The heuristic does not dereference the bias pointer but takes its alignment from its value.
    if (plan_.epilogue != gemm::Epilogue::none)
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER,
               reinterpret_cast<const void*>(static_cast<uintptr_t>(align(plan_.bias_type))));

    cublasLtMatmulHeuristicResult_t results[kRequestedAlgorithms] = {};
    int count = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(ctx.cublaslt(), desc_.get(), a_.get(), b_.get(), d_.get(), d_.get(), pref.get(),
                                       kRequestedAlgorithms, results, &count);
    if (plan_.epilogue != gemm::Epilogue::none)
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(nullptr));
    if (st == CUBLAS_STATUS_NOT_SUPPORTED)
      count = 0;  // no heuristic for this configuration
    else
      ST_CUBLAS_CHECK(st);

    std::vector<gemm::HeuristicCandidate> candidates(static_cast<size_t>(std::max(count, 0)));
    for (int i = 0; i < count; ++i) {
      gemm::HeuristicCandidate& c = candidates[static_cast<size_t>(i)];
      c.ok = results[i].state == CUBLAS_STATUS_SUCCESS;
      if (!c.ok) continue;
      c.workspace_bytes = static_cast<int64_t>(results[i].workspaceSize);
      // A result whose configuration cannot be read counts as split-K with any reduction.
      uint32_t scheme = 0;
      int32_t split_k = 1;
      size_t written = 0;
      if (cublasLtMatmulAlgoConfigGetAttribute(&results[i].algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
                                               sizeof(scheme), &written) != CUBLAS_STATUS_SUCCESS)
        scheme = gemm::reduction::all;
      if (cublasLtMatmulAlgoConfigGetAttribute(&results[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split_k,
                                               sizeof(split_k), &written) != CUBLAS_STATUS_SUCCESS)
        split_k = 2;
      c.reduction_scheme = scheme;
      c.split_k = split_k;
    }
    AlgoChoice choice;
    const int chosen = gemm::choose_heuristic(candidates, max_workspace, reduction_mask);
    if (chosen >= 0) {
      choice.found = true;
      choice.algo = results[chosen].algo;
      choice.workspace_bytes = static_cast<int64_t>(results[chosen].workspaceSize);
      choice.index = chosen;
    }
    heuristic_cache().emplace(key, choice);
    return choice;
  }

  gemm::GemmPlan plan_;
  MatrixLayout a_, b_, d_;
  MatmulDesc desc_;
  AlgoChoice choice_[2];
};

std::string mib(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1 << 20);
  return os.str();
}

class CublasLtInnerProduct final : public InnerProductOp {
 public:
  CublasLtInnerProduct(CudaOpContext& ctx, const InnerProductShape& s, cudaStream_t stream)
      : ctx_(ctx), s_(s), stream_(stream), who_("cuBLASLt inner product " + s.to_string()) {
    const CudaOpSettings& set = ctx.settings();
    const gemm::InnerProductGemms g = gemm::plan_inner_product(s, set.allow_tf32);
    staging_bytes_ = gemm::bias_staging_bytes(g.forward);
    const int64_t max_ws = gemm::max_algorithm_workspace(set.workspace_limit_bytes, staging_bytes_);
    const uint32_t mask = gemm::reduction_scheme_mask(set.deterministic);
    forward_.emplace(ctx, g.forward, mask, max_ws);
    backward_data_.emplace(ctx, g.backward_data, mask, max_ws);
    backward_weights_.emplace(ctx, g.backward_weights, mask, max_ws);
    if (g.backward_weights.epilogue == gemm::Epilogue::bias_grad_b && !backward_weights_->runs_any_pointers())
      backward_weights_.emplace(ctx, gemm::without_fused_bias_grad(g.backward_weights), mask, max_ws);
    for (const LtGemm* gm : gemms())
      ST_CHECK(gm->runs_some_pointers(), who_, ": cuBLASLt has no algorithm for the ", gm->plan().label(), " GEMM (",
               gm->plan().to_string(), ") within ", max_ws, " bytes of workspace",
               set.deterministic ? " without split-K (deterministic mode)" : "");
    int64_t algo_ws = 0;
    for (const LtGemm* gm : gemms()) algo_ws = std::max(algo_ws, gm->workspace_bytes());
    staging_offset_ = gemm::round_up_workspace(algo_ws);
    ctx.reserve_workspace(stream_, staging_offset_ + staging_bytes_, who_);
    for (const LtGemm* gm : gemms()) ctx.log_choice(describe(*gm, set));
  }

  void forward(const void* x, const void* w, const float* b, void* y) override {
    ST_CHECK(!s_.bias || b != nullptr, who_, " has a bias but forward was given none");
    char* ws = workspace();
    const void* bias = nullptr;
    if (s_.bias) {
      bias = b;
      if (forward_->plan().bias_cast) {
        void* staged = ws + staging_offset_;
        visit_float_type(s_.dtype, [&](auto t) {
          using T = decltype(t);
          ctx_.launch(stream_, "dense bias cast", s_.out_features,
                               kernels::Cast<float, T>{b, static_cast<T*>(staged)});
        });
        bias = staged;
      }
    }
    run(*forward_, x, w, nullptr, y, bias, ws);
  }

  void backward_data(const void* dy, const void* w, void* dx) override {
    run(*backward_data_, nullptr, w, dy, dx, nullptr, workspace());
  }

  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    ST_CHECK(!s_.bias || db != nullptr, who_, " has a bias but no bias gradient buffer was given");
    const gemm::GemmPlan& p = backward_weights_->plan();
    run(*backward_weights_, x, nullptr, dy, dw, p.epilogue == gemm::Epilogue::bias_grad_b ? db : nullptr, workspace());
    if (s_.bias && p.bias_grad_kernel) {
      visit_float_type(s_.dtype, [&](auto t) {
        using T = decltype(t);
        ctx_.launch(stream_, "dense bias grad", s_.out_features,
                             kernels::BiasGradStored<T>{static_cast<const T*>(dy), db, s_.batch, s_.out_features});
      });
    }
  }

 private:
  std::vector<const LtGemm*> gemms() const { return {&*forward_, &*backward_data_, &*backward_weights_}; }

  char* workspace() const {
    const int64_t have = ctx_.workspace_bytes(stream_);
    ST_CHECK(have >= staging_offset_ + staging_bytes_, who_, ": the stream's workspace has ", have,
             " bytes, less than the ", staging_offset_ + staging_bytes_, " reserved at creation");
    return static_cast<char*>(ctx_.workspace(stream_));
  }

  // The GEMM's operands by the roles its plan gives x, w and dy.
  void run(LtGemm& gm, const void* x, const void* w, const void* dy, void* out, const void* bias, char* ws) {
    const auto operand = [&](gemm::Operand o) -> const void* {
      switch (o) {
        case gemm::Operand::x:
          return x;
        case gemm::Operand::w:
          return w;
        case gemm::Operand::dy:
          return dy;
        default:
          ST_FAIL(who_, ": ", gm.plan().label(), " reads an output operand");
      }
    };
    gm.run(ctx_.cublaslt(), operand(gm.plan().a.operand), operand(gm.plan().b.operand), out, bias, ws, staging_offset_,
           stream_, who_);
  }

  // "dense fwd inner_product{...}: cuBLASLt heuristic #0, 0.00 MiB workspace, bf16 tensor cores with f32
  // accumulation, bias epilogue (f32 bias cast to bf16), deterministic (no split-K); unaligned pointers: #1, 0.00 MiB"
  std::string describe(const LtGemm& gm, const CudaOpSettings& set) const {
    const gemm::GemmPlan& p = gm.plan();
    const AlgoChoice& vec = gm.choice(AlignmentVariant::vector);
    const AlgoChoice& elem = gm.choice(AlignmentVariant::element);
    const AlgoChoice& used = vec.found ? vec : elem;
    std::ostringstream os;
    os << p.label() << " " << s_.to_string() << ": cuBLASLt heuristic #" << used.index << ", "
       << mib(used.workspace_bytes) << " MiB workspace, ";
    if (s_.dtype == DType::f32)
      os << (p.compute == gemm::ComputeType::f32_fast_tf32 ? "tf32 tensor cores" : "f32 (no tf32)");
    else
      os << dtype_name(s_.dtype) << " tensor cores with f32 accumulation";
    if (p.epilogue == gemm::Epilogue::bias)
      os << ", bias epilogue"
         << (p.bias_cast ? " (f32 bias cast to " + std::string(dtype_name(p.bias_type)) + ")" : "");
    if (p.epilogue == gemm::Epilogue::bias_grad_b) os << ", db by the BGRADB epilogue";
    if (p.bias_grad_kernel) os << ", db by BiasGradStored (no BGRADB algorithm)";
    os << (set.deterministic ? ", deterministic (no split-K)" : ", split-K allowed (not deterministic)");
    if (!vec.found)
      os << "; no 16-byte-aligned algorithm";
    else if (!elem.found)
      os << "; no algorithm for unaligned pointers";
    else if (elem.index != vec.index || elem.workspace_bytes != vec.workspace_bytes)
      os << "; unaligned pointers: heuristic #" << elem.index << ", " << mib(elem.workspace_bytes) << " MiB";
    return os.str();
  }

  CudaOpContext& ctx_;
  InnerProductShape s_;
  cudaStream_t stream_;
  std::string who_;
  int64_t staging_bytes_ = 0;   // the forward's bias cast to bf16/f16
  int64_t staging_offset_ = 0;  // where it sits in the workspace: behind the algorithms' workspace
  std::optional<LtGemm> forward_, backward_data_, backward_weights_;
};

}  // namespace

std::unique_ptr<InnerProductOp> make_cublaslt_inner_product(CudaOpContext& ctx, const InnerProductShape& shape,
                                                            cudaStream_t stream) {
  return std::make_unique<CublasLtInnerProduct>(ctx, shape, stream);
}

}  // namespace scaletrain::cuda
