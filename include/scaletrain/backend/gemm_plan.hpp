// GEMM plans of the inner product: how y = x w^T + b, dx = dy w and dw = dy^T x, db = column sums of
// dy, on row-major [rows, features] data, become one column-major GEMM each, D = op(A) op(B) (+ an
// epilogue), exactly as cuBLASLt reads its parameters; and the policies around cuBLASLt's heuristic
// (cache key, workspace preference, choice among its results, pointer alignment). Pure host code
// with no CUDA include: the cpu build compiles and tests it (tests/test_backend_gemm_plan.cpp), and
// backend/cuda/cublaslt_inner_product.cpp turns it into cuBLASLt descriptors.
//
// Row-major to column-major: a row-major R[r, c] (row stride c) is, read column-major, R^T with
// rows = c, cols = r and ld = c. So every matrix is used as stored, without a copy, and the
// transposes are cuBLAS's op flags:
//   forward           D = y^T [out, N]  = op(A = w) [out, in]  op(B = x) [in, N]      (A: T, B: N)
//   backward_data     D = dx^T [in, N]  = op(A = w) [in, out]  op(B = dy) [out, N]    (A: N, B: N)
//   backward_weights  D = dw^T [in, out] = op(A = x) [in, N]   op(B = dy) [N, out]    (A: N, B: T)
// The bias of forward has length m = out (cuBLASLt's BIAS epilogue adds bias[i] to row i of D); the
// bias gradient of backward_weights has length n = out and sums op(B) over k = N (BGRADB).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "scaletrain/backend/ops.hpp"
#include "scaletrain/core/dtype.hpp"

namespace scaletrain::gemm {

enum class Direction : uint8_t { forward, backward_data, backward_weights };
// cuBLAS's CUBLAS_OP_N / CUBLAS_OP_T.
enum class Transpose : uint8_t { none, transpose };
// The inner product's tensors a GEMM reads (x, w, dy) or writes (y, dx, dw).
enum class Operand : uint8_t { x, w, dy, y, dx, dw };
// CUBLAS_COMPUTE_32F (f32 accumulation; no TF32 for f32 inputs; tensor cores for bf16/f16 inputs)
// and CUBLAS_COMPUTE_32F_FAST_TF32 (f32 inputs rounded to TF32 on tensor cores, f32 accumulation).
enum class ComputeType : uint8_t { f32, f32_fast_tf32 };
// CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_BGRADB.
enum class Epilogue : uint8_t { none, bias, bias_grad_b };

// The bits of cublasLtReductionScheme_t (same values; the CUDA side static_asserts them).
namespace reduction {
constexpr uint32_t none = 0;          // the dot product is computed in one sequence (no split-K)
constexpr uint32_t inplace = 1;       // split-K reduced in the output buffer
constexpr uint32_t compute_type = 2;  // split-K partials in the workspace in the compute type
constexpr uint32_t output_type = 4;   // split-K partials in the workspace in the output type
constexpr uint32_t all = 7;
}  // namespace reduction

// A matrix as stored, read column-major: rows x cols with leading dimension ld (elements).
struct Matrix {
  Operand operand = Operand::x;
  DType type = DType::f32;
  int64_t rows = 0, cols = 0, ld = 0;
};

// One cuBLASLt matmul: D[m, n] = op(A)[m, k] op(B)[k, n] (+ epilogue), alpha 1, beta 0, C = D.
struct GemmPlan {
  Direction direction = Direction::forward;
  int64_t m = 0, n = 0, k = 0;
  Transpose transa = Transpose::none, transb = Transpose::none;
  Matrix a, b, d;                 // C has the layout and type of D
  DType scale_type = DType::f32;  // alpha, beta
  ComputeType compute = ComputeType::f32;
  Epilogue epilogue = Epilogue::none;
  int64_t bias_length = 0;       // forward: m; backward_weights with BGRADB: n; otherwise 0
  DType bias_type = DType::f32;  // the element type cuBLASLt reads (bias) or writes (bias gradient)
  // forward, bf16/f16 with a bias: the op's f32 bias is cast to bias_type (= the storage type) before
  // the GEMM, because cuBLASLt's BIAS epilogue reads a bias of D's type (see the .cpp of the op).
  bool bias_cast = false;
  // backward_weights with a bias but no BGRADB: db is computed by the reduction primitive's column sums.
  bool bias_grad_kernel = false;

  int64_t lda() const { return a.ld; }
  int64_t ldb() const { return b.ld; }
  int64_t ldc() const { return d.ld; }
  // "dense fwd", "dense bwd-data", "dense bwd-weights"
  std::string label() const;
  // "m 10 n 4 k 37, A w T ld 37, B x N ld 37, D ld 10, bf16 x bf16 -> bf16, compute f32, bias epilogue (bf16, 10)"
  std::string to_string() const;
};

struct InnerProductGemms {
  GemmPlan forward, backward_data, backward_weights;
};

// The three GEMMs of `shape` (positive sizes; f32, bf16 or f16, else Error naming the shape). f32
// computes in TF32 when allow_tf32; bf16 and f16 always accumulate in f32 on tensor cores.
InnerProductGemms plan_inner_product(const InnerProductShape& shape, bool allow_tf32);
// The compute type of a GEMM on `dtype` inputs.
ComputeType compute_type(DType dtype, bool allow_tf32);
// backward_weights without the BGRADB epilogue: db by the reduction primitive's column sums instead.
GemmPlan without_fused_bias_grad(GemmPlan plan);

// Heuristic preferences.
// CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK: deterministic allows no split-K at all (none), else all.
uint32_t reduction_scheme_mask(bool deterministic);
// Workspace buffers, offsets and sizes are multiples of this (cuBLASLt wants a 256-byte aligned workspace).
constexpr int64_t kWorkspaceAlignment = 256;
int64_t round_up_workspace(int64_t bytes);
// Bytes of the staged (cast) forward bias, 0 when there is none.
int64_t bias_staging_bytes(const GemmPlan& forward);
// CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: what is left of the limit once `staging_bytes` (rounded)
// are set aside behind the algorithm's workspace; 0 when nothing is left.
int64_t max_algorithm_workspace(int64_t limit_bytes, int64_t staging_bytes);

// Pointer alignment. An operand is either a whole buffer from the allocator (256-byte aligned) or a
// view into a flat parameter/gradient buffer at any element offset (nn/model.cpp), so only the
// element size is guaranteed. Each GEMM gets two algorithms at creation: one that may assume
// kVectorAlignment for every pointer, and one that assumes only the element size; each call uses
// the first when its actual pointers allow it.
constexpr int kVectorAlignment = 16;
enum class AlignmentVariant : uint8_t { vector, element };
// The largest power of two that divides `address`, at most 256 (256 for null).
int pointer_alignment(uintptr_t address);
// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES for a matrix, or the bias, of `type` in `variant`.
int min_alignment(DType type, AlignmentVariant variant);
// The variant a call may use: vector when every non-null pointer is kVectorAlignment-aligned.
AlignmentVariant variant_for(std::initializer_list<const void*> pointers);

// The problem a GEMM algorithm is chosen for (AlgorithmRecord::key, after "gemm "): sizes,
// transposes, leading dimensions, types, compute type, epilogue and bias type, alignments. Not the
// reduction mask or the workspace: a pinned record is checked against those.
std::string problem_key(const GemmPlan& plan, AlignmentVariant variant);
// The heuristic cache key: everything cublasLtMatmulAlgoGetHeuristic sees (sizes, transposes,
// leading dimensions, types, compute type, epilogue and bias type, reduction mask, workspace limit,
// alignments). The direction is not part of it: equal GEMMs share their choice.
std::string heuristic_key(const GemmPlan& plan, uint32_t reduction_mask, int64_t max_workspace_bytes,
                          AlignmentVariant variant);

// One result of cublasLtMatmulAlgoGetHeuristic, as the choice policy sees it.
struct HeuristicCandidate {
  bool ok = false;                // state == CUBLAS_STATUS_SUCCESS
  int64_t workspace_bytes = 0;    // workspaceSize
  uint32_t reduction_scheme = 0;  // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME
  int32_t split_k = 1;            // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  float time_ms = -1;             // timed: its time on the GEMM's shape; -1 untimed
  // No split-K: the dot product in one sequence (what run.deterministic allows).
  bool deterministic() const { return reduction_scheme == reduction::none && split_k <= 1; }
};
// The first candidate (cuBLASLt orders them by estimated time) that succeeded, fits the workspace
// limit and whose reduction scheme is in `reduction_mask` (with mask none: no split-K either), or -1.
// cuBLASLt already filters by the preferences; this holds the rule even if a result slips through.
int choose_heuristic(const std::vector<HeuristicCandidate>& candidates, int64_t max_workspace_bytes,
                     uint32_t reduction_mask);
// The fastest timed candidate that choose_heuristic's rules allow (ties to the earlier), or -1.
int choose_timed(const std::vector<HeuristicCandidate>& candidates, int64_t max_workspace_bytes,
                 uint32_t reduction_mask);

}  // namespace scaletrain::gemm
