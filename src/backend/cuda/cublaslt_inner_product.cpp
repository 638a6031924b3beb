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
//   variant below), the op uses CUBLASLT_EPILOGUE_DEFAULT and the reduction primitive's column
//   sums of dy (kernels/reduction.hpp), and says so in its log line.
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
// - Algorithm choice (the context's mode, backend/algorithm_book.hpp). heuristic: the first of
//   cuBLASLt's results that the rules allow. timed: each allowed result (at most
//   kRequestedAlgorithms) runs on zeroed scratch operands, once to warm up and then kTimedRuns times
//   between two events, and the fastest wins (split-K kept out under run.deterministic by the
//   reduction mask and the policy, as for the heuristic). pinned: the book's cublasLtMatmulAlgo_t
//   (the header documents the struct as trivially serializable for reuse with the same cuBLAS
//   version), checked by cublasLtMatmulAlgoCheck, which also gives its workspace. Equal GEMMs share
//   one record in the context's book.
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
constexpr int kTimedRuns = 5;

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

// An algorithm cuBLASLt's heuristic returned, its place in the list (fastest first by cuBLASLt's
// estimate), and the record of the choice.
struct AlgoChoice {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  int64_t workspace_bytes = 0;
  int index = -1;
  AlgorithmRecord record;
};

// cuBLASLt's heuristic results for one GEMM and alignment variant, and what the policy sees of them.
struct HeuristicList {
  std::vector<cublasLtMatmulHeuristicResult_t> results;
  std::vector<gemm::HeuristicCandidate> candidates;
};

// Heuristic lists by device and gemm::heuristic_key, so that equal GEMMs (a shape made again, the
// same dense layer twice) ask cuBLASLt once per process.
std::mutex& cache_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, HeuristicList>& heuristic_cache() {
  static std::map<std::string, HeuristicList> cache;
  return cache;
}

// cublasLtMatmulAlgo_t as hex and back (AlgorithmRecord::config).
std::string algo_hex(const cublasLtMatmulAlgo_t& algo) {
  static_assert(sizeof(algo.data) == 8 * sizeof(uint64_t));
  std::ostringstream os;
  os << std::hex << std::setfill('0');
  for (uint64_t word : algo.data) os << std::setw(16) << word;
  return os.str();
}

cublasLtMatmulAlgo_t algo_of_hex(const std::string& hex, const std::string& who) {
  cublasLtMatmulAlgo_t algo{};
  ST_CHECK(hex.size() == 8 * 16 && hex.find_first_not_of("0123456789abcdef") == std::string::npos, who,
           ": the pinned cuBLASLt algorithm '", hex, "' is not 128 hex digits");
  for (size_t i = 0; i < 8; ++i) algo.data[i] = std::stoull(hex.substr(i * 16, 16), nullptr, 16);
  return algo;
}

std::string candidate_name(int index) { return index < 0 ? "none" : "cuBLASLt #" + std::to_string(index); }

// One direction's matmul: its descriptors and one algorithm per alignment variant.
class LtGemm {
 public:
  LtGemm(CudaOpContext& ctx, const gemm::GemmPlan& plan, const std::string& shape, uint32_t reduction_mask,
         int64_t max_workspace, cudaStream_t stream)
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
      choice_[index(v)] = choose(ctx, v, shape, reduction_mask, max_workspace, stream);
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

  // The algorithm of variant `v`: the book's record where the context pins one or an equal GEMM
  // made it, else cuBLASLt's heuristic list, timed in timed mode; recorded in the context's book.
  AlgoChoice choose(CudaOpContext& ctx, AlignmentVariant v, const std::string& shape, uint32_t reduction_mask,
                    int64_t max_workspace, cudaStream_t stream) {
    const std::string key = "gemm " + gemm::problem_key(plan_, v);
    const AlgorithmMode mode = ctx.algorithm_mode();
    if (mode == AlgorithmMode::pinned) return pinned(ctx, key, v, max_workspace);
    if (const auto made = ctx.made_record(key)) return of_record(*made);
    HeuristicList list = heuristic(ctx, v, reduction_mask, max_workspace);
    const int first = gemm::choose_heuristic(list.candidates, max_workspace, reduction_mask);
    int chosen = first;
    if (mode == AlgorithmMode::timed && first >= 0) {
      time_candidates(ctx, list, reduction_mask, max_workspace, stream);
      chosen = gemm::choose_timed(list.candidates, max_workspace, reduction_mask);
      if (chosen < 0) chosen = first;
    }
    AlgoChoice c;
    AlgorithmRecord& r = c.record;
    r.key = key;
    r.op = plan_.label() + (v == AlignmentVariant::vector ? "" : " unaligned");
    r.shape = shape;
    r.how = mode;
    r.algo = chosen;
    r.name = candidate_name(chosen);
    r.heuristic_name = candidate_name(first);
    if (chosen >= 0) {
      const gemm::HeuristicCandidate& cand = list.candidates[static_cast<size_t>(chosen)];
      c.found = true;
      c.algo = list.results[static_cast<size_t>(chosen)].algo;
      c.workspace_bytes = cand.workspace_bytes;
      c.index = chosen;
      r.config = algo_hex(c.algo);
      r.workspace_bytes = cand.workspace_bytes;
      r.deterministic = cand.deterministic();
      r.time_ms = cand.time_ms;
      r.heuristic_time_ms = list.candidates[static_cast<size_t>(first)].time_ms;
    }
    ctx.record(r);
    return c;
  }

  // A record (the book's, or an equal GEMM's) as the choice it describes.
  AlgoChoice of_record(const AlgorithmRecord& r) const {
    AlgoChoice c;
    c.record = r;
    if (r.algo < 0) return c;
    c.found = true;
    c.algo = algo_of_hex(r.config, r.op + " " + r.shape);
    c.workspace_bytes = r.workspace_bytes;
    c.index = r.algo;
    return c;
  }

  // The pinned book's algorithm for `key`, checked by cuBLASLt and against what this run allows.
  AlgoChoice pinned(CudaOpContext& ctx, const std::string& key, AlignmentVariant v, int64_t max_workspace) {
    const std::string what = plan_.label() + " " + plan_.to_string();
    AlgoChoice c = of_record(pinned_record(ctx.pinned(), key, what, ctx.pinned_from()));
    if (c.found) {
      with_representative_bias(v, [&] {
        cublasLtMatmulHeuristicResult_t checked{};
        const cublasStatus_t st = cublasLtMatmulAlgoCheck(ctx.cublaslt(), desc_.get(), a_.get(), b_.get(), d_.get(),
                                                          d_.get(), &c.algo, &checked);
        c.workspace_bytes = st == CUBLAS_STATUS_SUCCESS ? static_cast<int64_t>(checked.workspaceSize) : -1;
      });
      check_pinned_record(c.record, c.workspace_bytes, max_workspace, ctx.settings().workspace_auto,
                          ctx.settings().deterministic, ctx.pinned_from());
      c.record.workspace_bytes = c.workspace_bytes;
    }
    ctx.record(c.record);
    return c;
  }

  // The heuristic reads the bias pointer only for its alignment: a representative value while `f` runs.
  template <class F>
  void with_representative_bias(AlignmentVariant v, const F& f) {
    if (plan_.epilogue != gemm::Epilogue::none)
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(static_cast<uintptr_t>(
                                                      gemm::min_alignment(plan_.bias_type, v))));
    f();
    if (plan_.epilogue != gemm::Epilogue::none)
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(nullptr));
  }

  HeuristicList heuristic(CudaOpContext& ctx, AlignmentVariant v, uint32_t reduction_mask, int64_t max_workspace) {
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

    cublasLtMatmulHeuristicResult_t results[kRequestedAlgorithms] = {};
    int count = 0;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    with_representative_bias(v, [&] {
      st = cublasLtMatmulAlgoGetHeuristic(ctx.cublaslt(), desc_.get(), a_.get(), b_.get(), d_.get(), d_.get(),
                                          pref.get(), kRequestedAlgorithms, results, &count);
    });
    if (st == CUBLAS_STATUS_NOT_SUPPORTED)
      count = 0;  // no heuristic for this configuration
    else
      ST_CUBLAS_CHECK(st);

    HeuristicList list;
    list.results.assign(results, results + std::max(count, 0));
    list.candidates.resize(list.results.size());
    for (size_t i = 0; i < list.results.size(); ++i) {
      gemm::HeuristicCandidate& c = list.candidates[i];
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
    heuristic_cache().emplace(key, list);
    return list;
  }

  // Each allowed candidate's time (HeuristicCandidate::time_ms) on zeroed scratch operands on `stream`.
  void time_candidates(CudaOpContext& ctx, HeuristicList& list, uint32_t reduction_mask, int64_t max_workspace,
                       cudaStream_t stream) {
    std::vector<size_t> timed;
    int64_t ws_bytes = 0;
    for (size_t i = 0; i < list.candidates.size(); ++i) {
      const gemm::HeuristicCandidate& c = list.candidates[i];
      if (gemm::choose_heuristic({c}, max_workspace, reduction_mask) != 0) continue;
      timed.push_back(i);
      ws_bytes = std::max(ws_bytes, c.workspace_bytes);
    }
    const auto bytes = [](const gemm::Matrix& m) { return m.ld * m.cols * static_cast<int64_t>(dtype_size(m.type)); };
    const std::string who = "cuBLASLt algorithm timing for " + plan_.to_string();
    const Tensor a = ctx.buffer({bytes(plan_.a)}, DType::u8, who + ": A");
    const Tensor b = ctx.buffer({bytes(plan_.b)}, DType::u8, who + ": B");
    const Tensor d = ctx.buffer({bytes(plan_.d)}, DType::u8, who + ": D");
    const Tensor bias =
        ctx.buffer({std::max<int64_t>(1, plan_.bias_length) * static_cast<int64_t>(dtype_size(plan_.bias_type))},
                   DType::u8, who + ": bias");
    const Tensor ws = ctx.buffer({std::max<int64_t>(ws_bytes, 1)}, DType::u8, who + ": workspace");
    for (const Tensor* t : {&a, &b, &d, &bias}) ST_CUDA_CHECK(cudaMemsetAsync(t->device_raw(), 0, t->bytes(), stream));
    if (plan_.epilogue != gemm::Epilogue::none) set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.device_raw());
    cudaEvent_t start = nullptr, stop = nullptr;
    ST_CUDA_CHECK(cudaEventCreate(&start));
    ST_CUDA_CHECK(cudaEventCreate(&stop));
    const float alpha = 1.0f, beta = 0.0f;
    for (size_t i : timed) {
      const cublasLtMatmulAlgo_t& algo = list.results[i].algo;
      const size_t need = static_cast<size_t>(list.candidates[i].workspace_bytes);
      const auto once = [&] {
        return cublasLtMatmul(ctx.cublaslt(), desc_.get(), &alpha, a.device_raw(), a_.get(), b.device_raw(), b_.get(),
                              &beta, d.device_raw(), d_.get(), d.device_raw(), d_.get(), &algo,
                              need > 0 ? ws.device_raw() : nullptr, need, stream);
      };
      if (once() != CUBLAS_STATUS_SUCCESS) continue;  // left untimed: not chosen
      ST_CUDA_CHECK(cudaEventRecord(start, stream));
      for (int run = 0; run < kTimedRuns; ++run) ST_CUBLAS_CHECK(once());
      ST_CUDA_CHECK(cudaEventRecord(stop, stream));
      ST_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      ST_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      list.candidates[i].time_ms = ms / kTimedRuns;
    }
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
    if (plan_.epilogue != gemm::Epilogue::none)
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(nullptr));
    ST_CUDA_CHECK(cudaStreamSynchronize(stream));  // the scratch operands are released after this
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
    ctx.remember(s, stream);
    const int64_t max_ws = gemm::max_algorithm_workspace(ctx.workspace_limit(stream), staging_bytes_);
    const uint32_t mask = gemm::reduction_scheme_mask(set.deterministic);
    const std::string shape = s.to_string();
    forward_.emplace(ctx, g.forward, shape, mask, max_ws, stream);
    backward_data_.emplace(ctx, g.backward_data, shape, mask, max_ws, stream);
    backward_weights_.emplace(ctx, g.backward_weights, shape, mask, max_ws, stream);
    if (g.backward_weights.epilogue == gemm::Epilogue::bias_grad_b && !backward_weights_->runs_any_pointers())
      backward_weights_.emplace(ctx, gemm::without_fused_bias_grad(g.backward_weights), shape, mask, max_ws, stream);
    for (const LtGemm* gm : gemms())
      ST_CHECK(gm->runs_some_pointers(), who_, ": cuBLASLt has no algorithm for the ", gm->plan().label(), " GEMM (",
               gm->plan().to_string(), ") within ", max_ws, " bytes of workspace",
               set.deterministic ? " without split-K (deterministic mode)" : "");
    int64_t algo_ws = 0;
    for (const LtGemm* gm : gemms()) algo_ws = std::max(algo_ws, gm->workspace_bytes());
    staging_offset_ = gemm::round_up_workspace(algo_ws);
    ctx.reserve_workspace(stream_, staging_offset_ + staging_bytes_, who_);
    for (const LtGemm* gm : gemms()) ctx.log_choice(describe(*gm, set));
    if (s.bias && backward_weights_->plan().bias_grad_kernel) {
      bias_grad_plan_ = kernels::plan_column_sums(s.batch, s.out_features, 1, ctx.multiprocessor_count());
      bias_partial_ = ctx.buffer({std::max<int64_t>(1, bias_grad_plan_.partial_size())}, DType::f64,
                                 who_ + ": bias gradient partial sums");
    }
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
        ctx_.launch_column_sums(stream_, "dense bias grad", bias_grad_plan_,
                                kernels::ColumnValues<T>{static_cast<const T*>(dy), s_.out_features},
                                bias_partial_.device_data<double>(), kernels::StoreFloat{db});
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
    os << p.label() << " " << s_.to_string() << ": cuBLASLt heuristic #" << used.index << " ("
       << algorithm_mode_name(used.record.how);
    if (used.record.time_ms >= 0) os << " " << std::fixed << std::setprecision(3) << used.record.time_ms << " ms";
    if (used.record.heuristic_time_ms >= 0 && used.record.heuristic_name != used.record.name)
      os << ", the heuristic's first " << used.record.heuristic_name << " " << used.record.heuristic_time_ms << " ms";
    os << "), " << mib(used.workspace_bytes) << " MiB workspace, ";
    if (s_.dtype == DType::f32)
      os << (p.compute == gemm::ComputeType::f32_fast_tf32 ? "tf32 tensor cores" : "f32 (no tf32)");
    else
      os << dtype_name(s_.dtype) << " tensor cores with f32 accumulation";
    if (p.epilogue == gemm::Epilogue::bias)
      os << ", bias epilogue"
         << (p.bias_cast ? " (f32 bias cast to " + std::string(dtype_name(p.bias_type)) + ")" : "");
    if (p.epilogue == gemm::Epilogue::bias_grad_b) os << ", db by the BGRADB epilogue";
    if (p.bias_grad_kernel) os << ", db by column sums (no BGRADB algorithm)";
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
  kernels::ColumnSumsPlan bias_grad_plan_;  // db without BGRADB: column sums of dy [batch, out]
  Tensor bias_partial_;                     // and their partial sums, f64
};

}  // namespace

std::unique_ptr<InnerProductOp> make_cublaslt_inner_product(CudaOpContext& ctx, const InnerProductShape& shape,
                                                            cudaStream_t stream) {
  return std::make_unique<CublasLtInnerProduct>(ctx, shape, stream);
}

}  // namespace scaletrain::cuda
