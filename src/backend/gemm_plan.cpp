// GEMM plans of the inner product (column-major cuBLASLt parameters from row-major shapes) and the
// heuristic policies: cache key, workspace preference, choice, pointer alignment.
#include "scaletrain/backend/gemm_plan.hpp"

#include <algorithm>
#include <sstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain::gemm {
namespace {

const char* operand_name(Operand o) {
  switch (o) {
    case Operand::x:
      return "x";
    case Operand::w:
      return "w";
    case Operand::dy:
      return "dy";
    case Operand::y:
      return "y";
    case Operand::dx:
      return "dx";
    case Operand::dw:
      return "dw";
  }
  return "?";
}

const char* transpose_name(Transpose t) { return t == Transpose::none ? "N" : "T"; }

const char* compute_name(ComputeType c) { return c == ComputeType::f32 ? "32F" : "32F_FAST_TF32"; }

const char* epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::none:
      return "default";
    case Epilogue::bias:
      return "bias";
    case Epilogue::bias_grad_b:
      return "bgradb";
  }
  return "?";
}

// A stored matrix used with `trans` in a GEMM whose op(.) is rows_op x cols_op.
Matrix stored(Operand operand, DType type, Transpose trans, int64_t rows_op, int64_t cols_op, int64_t ld) {
  Matrix mat;
  mat.operand = operand;
  mat.type = type;
  mat.rows = trans == Transpose::none ? rows_op : cols_op;
  mat.cols = trans == Transpose::none ? cols_op : rows_op;
  mat.ld = ld;
  return mat;
}

GemmPlan make_plan(Direction dir, int64_t m, int64_t n, int64_t k, Operand a, Transpose ta, int64_t lda, Operand b,
                   Transpose tb, int64_t ldb, Operand d, DType in_type, DType out_type, ComputeType compute) {
  GemmPlan p;
  p.direction = dir;
  p.m = m;
  p.n = n;
  p.k = k;
  p.transa = ta;
  p.transb = tb;
  p.a = stored(a, in_type, ta, m, k, lda);
  p.b = stored(b, in_type, tb, k, n, ldb);
  p.d = stored(d, out_type, Transpose::none, m, n, m);
  p.compute = compute;
  return p;
}

}  // namespace

std::string GemmPlan::label() const {
  switch (direction) {
    case Direction::forward:
      return "dense fwd";
    case Direction::backward_data:
      return "dense bwd-data";
    case Direction::backward_weights:
      return "dense bwd-weights";
  }
  return "dense ?";
}

std::string GemmPlan::to_string() const {
  std::ostringstream os;
  os << "m " << m << " n " << n << " k " << k << ", A " << operand_name(a.operand) << " " << transpose_name(transa)
     << " ld " << a.ld << ", B " << operand_name(b.operand) << " " << transpose_name(transb) << " ld " << b.ld << ", D "
     << operand_name(d.operand) << " ld " << d.ld << ", " << dtype_name(a.type) << " x " << dtype_name(b.type) << " -> "
     << dtype_name(d.type) << ", compute " << compute_name(compute);
  if (epilogue != Epilogue::none)
    os << ", " << epilogue_name(epilogue) << " epilogue (" << dtype_name(bias_type) << ", " << bias_length << ")";
  if (bias_cast) os << ", f32 bias cast to " << dtype_name(bias_type);
  if (bias_grad_kernel) os << ", db by column sums";
  return os.str();
}

ComputeType compute_type(DType dtype, bool allow_tf32) {
  return dtype == DType::f32 && allow_tf32 ? ComputeType::f32_fast_tf32 : ComputeType::f32;
}

InnerProductGemms plan_inner_product(const InnerProductShape& s, bool allow_tf32) {
  ST_CHECK(s.batch > 0 && s.in_features > 0 && s.out_features > 0, "invalid inner product ", s.to_string(),
           ": batch, in and out features must be positive");
  ST_CHECK(s.dtype == DType::f32 || s.dtype == DType::bf16 || s.dtype == DType::f16, "inner product ", s.to_string(),
           ": cuBLASLt runs f32, bf16 or f16, not ", dtype_name(s.dtype));
  const int64_t rows = s.batch, in = s.in_features, out = s.out_features;
  const DType t = s.dtype;
  const ComputeType c = compute_type(t, allow_tf32);
  using enum Operand;
  using enum Transpose;
  InnerProductGemms g;
  // y^T[out, N] = (w stored [in, out] ld in)^T * (x stored [in, N] ld in)
  g.forward = make_plan(Direction::forward, out, rows, in, w, transpose, in, x, none, in, y, t, t, c);
  if (s.bias) {
    g.forward.epilogue = Epilogue::bias;
    g.forward.bias_length = out;
    g.forward.bias_type = t;
    g.forward.bias_cast = t != DType::f32;
  }
  // dx^T[in, N] = (w stored [in, out] ld in) * (dy stored [out, N] ld out)
  g.backward_data = make_plan(Direction::backward_data, in, rows, out, w, none, in, dy, none, out, dx, t, t, c);
  // dw^T[in, out] = (x stored [in, N] ld in) * (dy stored [out, N] ld out)^T, D in f32
  g.backward_weights =
      make_plan(Direction::backward_weights, in, out, rows, x, none, in, dy, transpose, out, dw, t, DType::f32, c);
  if (s.bias) {
    g.backward_weights.epilogue = Epilogue::bias_grad_b;
    g.backward_weights.bias_length = out;
    g.backward_weights.bias_type = DType::f32;
  }
  return g;
}

GemmPlan without_fused_bias_grad(GemmPlan p) {
  if (p.epilogue != Epilogue::bias_grad_b) return p;
  p.epilogue = Epilogue::none;
  p.bias_grad_kernel = true;
  p.bias_length = 0;
  return p;
}

uint32_t reduction_scheme_mask(bool deterministic) { return deterministic ? reduction::none : reduction::all; }

int64_t round_up_workspace(int64_t bytes) {
  if (bytes <= 0) return 0;
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

int64_t bias_staging_bytes(const GemmPlan& forward) {
  return forward.bias_cast ? forward.bias_length * static_cast<int64_t>(dtype_size(forward.bias_type)) : 0;
}

int64_t max_algorithm_workspace(int64_t limit_bytes, int64_t staging_bytes) {
  const int64_t left = limit_bytes - round_up_workspace(staging_bytes);
  // The staging buffer starts at a 256-byte boundary behind the algorithm's workspace.
  return left <= 0 ? 0 : left / kWorkspaceAlignment * kWorkspaceAlignment;
}

int pointer_alignment(uintptr_t address) {
  if (address == 0) return 256;
  int a = 1;
  while (a < 256 && (address & static_cast<uintptr_t>(a)) == 0) a <<= 1;
  return a;
}

int min_alignment(DType type, AlignmentVariant variant) {
  return variant == AlignmentVariant::vector ? kVectorAlignment : static_cast<int>(dtype_size(type));
}

AlignmentVariant variant_for(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (pointer_alignment(reinterpret_cast<uintptr_t>(p)) < kVectorAlignment) return AlignmentVariant::element;
  return AlignmentVariant::vector;
}

std::string problem_key(const GemmPlan& p, AlignmentVariant variant) {
  std::ostringstream os;
  os << p.m << "x" << p.n << "x" << p.k << "|" << transpose_name(p.transa) << transpose_name(p.transb) << "|" << p.a.ld
     << "," << p.b.ld << "," << p.d.ld << "|" << dtype_name(p.a.type) << "," << dtype_name(p.b.type) << ","
     << dtype_name(p.d.type) << "," << dtype_name(p.scale_type) << "|" << compute_name(p.compute) << "|"
     << epilogue_name(p.epilogue);
  if (p.epilogue != Epilogue::none) os << ":" << dtype_name(p.bias_type);
  os << "|align" << min_alignment(p.a.type, variant) << "," << min_alignment(p.b.type, variant) << ","
     << min_alignment(p.d.type, variant);
  if (p.epilogue != Epilogue::none) os << "," << min_alignment(p.bias_type, variant);
  return os.str();
}

std::string heuristic_key(const GemmPlan& p, uint32_t reduction_mask, int64_t max_workspace_bytes,
                          AlignmentVariant variant) {
  return problem_key(p, variant) + "|red" + std::to_string(reduction_mask) + "|ws" + std::to_string(max_workspace_bytes);
}

namespace {

bool allowed(const HeuristicCandidate& c, int64_t max_workspace_bytes, uint32_t reduction_mask) {
  if (!c.ok || c.workspace_bytes < 0 || c.workspace_bytes > max_workspace_bytes) return false;
  if ((c.reduction_scheme & ~reduction_mask) != 0) return false;
  return !(reduction_mask == reduction::none && c.split_k > 1);
}

}  // namespace

int choose_heuristic(const std::vector<HeuristicCandidate>& candidates, int64_t max_workspace_bytes,
                     uint32_t reduction_mask) {
  for (size_t i = 0; i < candidates.size(); ++i)
    if (allowed(candidates[i], max_workspace_bytes, reduction_mask)) return static_cast<int>(i);
  return -1;
}

int choose_timed(const std::vector<HeuristicCandidate>& candidates, int64_t max_workspace_bytes,
                 uint32_t reduction_mask) {
  int best = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const HeuristicCandidate& c = candidates[i];
    if (c.time_ms < 0 || !allowed(c, max_workspace_bytes, reduction_mask)) continue;
    if (best < 0 || c.time_ms < candidates[static_cast<size_t>(best)].time_ms) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace scaletrain::gemm
