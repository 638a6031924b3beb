// The inner product's GEMM plans (backend/gemm_plan.hpp) that the CUDA backend hands to cuBLASLt:
// a naive column-major GEMM that reads only the plan's m, n, k, transposes, leading dimensions,
// operand roles and epilogue, as cuBLASLt interprets them, must reproduce the CPU backend's inner
// product in all three directions at odd shapes; plus the type and compute mapping, the heuristic
// cache key, the workspace preference, the choice among heuristic results and pointer alignment.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/gemm_plan.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/reduction.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using gemm::AlignmentVariant;
using gemm::ComputeType;
using gemm::Epilogue;
using gemm::GemmPlan;
using gemm::Operand;
using gemm::Transpose;
using testing::expect_close;
using testing::random_vec;
using testing::Ref;
using testing::Vec;

InnerProductShape ip(int64_t batch, int64_t in, int64_t out, bool bias, DType dtype = DType::f32) {
  InnerProductShape s;
  s.batch = batch;
  s.in_features = in;
  s.out_features = out;
  s.bias = bias;
  s.dtype = dtype;
  return s;
}

// op(M)(r, c) of a column-major matrix with leading dimension ld, as cuBLAS reads it.
double element(const float* mat, Transpose t, int64_t ld, int64_t r, int64_t c) {
  return t == Transpose::none ? mat[r + c * ld] : mat[c + r * ld];
}

struct GemmResult {
  Ref d;          // D, column-major with ld = ldc
  Ref bias_grad;  // BGRADB: n values
};

// D = op(A) op(B) (+ bias[i] on row i for the BIAS epilogue); BGRADB: bias_grad[j] = sum over k of
// op(B)(k, j). Only the plan's parameters are used, never the inner product's shape.
GemmResult column_major_gemm(const GemmPlan& p, const float* a, const float* b, const float* bias) {
  EXPECT_GE(p.lda(), p.a.rows);
  EXPECT_GE(p.ldb(), p.b.rows);
  EXPECT_GE(p.ldc(), p.m);
  // The stored matrices hold op(.) as cuBLASLt derives it from the trans flags.
  EXPECT_EQ(p.transa == Transpose::none ? p.a.rows : p.a.cols, p.m);
  EXPECT_EQ(p.transa == Transpose::none ? p.a.cols : p.a.rows, p.k);
  EXPECT_EQ(p.transb == Transpose::none ? p.b.rows : p.b.cols, p.k);
  EXPECT_EQ(p.transb == Transpose::none ? p.b.cols : p.b.rows, p.n);
  GemmResult r;
  r.d.assign(static_cast<size_t>(p.ldc() * p.n), 0.0);
  for (int64_t j = 0; j < p.n; ++j)
    for (int64_t i = 0; i < p.m; ++i) {
      double acc = 0;
      for (int64_t q = 0; q < p.k; ++q)
        acc += element(a, p.transa, p.lda(), i, q) * element(b, p.transb, p.ldb(), q, j);
      if (p.epilogue == Epilogue::bias) acc += bias[i];
      r.d[i + j * p.ldc()] = acc;
    }
  if (p.epilogue == Epilogue::bias_grad_b) {
    r.bias_grad.assign(static_cast<size_t>(p.n), 0.0);
    for (int64_t j = 0; j < p.n; ++j)
      for (int64_t q = 0; q < p.k; ++q) r.bias_grad[j] += element(b, p.transb, p.ldb(), q, j);
  }
  return r;
}

// The inner product's inputs, looked up by the role a plan gives them.
struct Inputs {
  Vec x, w, dy, b;
  const float* operand(Operand o) const {
    switch (o) {
      case Operand::x:
        return x.data();
      case Operand::w:
        return w.data();
      case Operand::dy:
        return dy.data();
      default:
        ADD_FAILURE() << "an output used as a GEMM input";
        return nullptr;
    }
  }
};

GemmResult run_plan(const GemmPlan& p, const Inputs& in) {
  return column_major_gemm(p, in.operand(p.a.operand), in.operand(p.b.operand),
                           p.epilogue == Epilogue::bias ? in.b.data() : nullptr);
}

// The plans of `s` against the CPU backend's inner product on the same random inputs.
void check_against_cpu(const InnerProductShape& s) {
  SCOPED_TRACE(s.to_string());
  const int64_t N = s.batch, I = s.in_features, O = s.out_features;
  const gemm::InnerProductGemms g = gemm::plan_inner_product(s, false);
  auto backend = make_cpu_backend();
  auto op = backend->make_inner_product(s);
  Inputs in{random_vec(N * I, 11), random_vec(O * I, 12), random_vec(N * O, 13), random_vec(O, 14)};

  Vec y(N * O, 1e30f), dx(N * I, 1e30f), dw(O * I, 1e30f), db(O, 1e30f);
  op->forward(in.x.data(), in.w.data(), s.bias ? in.b.data() : nullptr, y.data());
  op->backward_data(in.dy.data(), in.w.data(), dx.data());
  op->backward_weights(in.x.data(), in.dy.data(), dw.data(), s.bias ? db.data() : nullptr);

  // The output D is the row-major result read column-major: same memory, ld = row length.
  EXPECT_EQ(g.forward.d.operand, Operand::y);
  EXPECT_EQ(g.backward_data.d.operand, Operand::dx);
  EXPECT_EQ(g.backward_weights.d.operand, Operand::dw);
  const GemmResult fwd = run_plan(g.forward, in);
  const GemmResult bwd_data = run_plan(g.backward_data, in);
  const GemmResult bwd_w = run_plan(g.backward_weights, in);
  expect_close(y, fwd.d, "forward", 1e-5);
  expect_close(dx, bwd_data.d, "backward_data", 1e-5);
  expect_close(dw, bwd_w.d, "backward_weights dw", 1e-5);
  if (s.bias) {
    EXPECT_EQ(g.backward_weights.epilogue, Epilogue::bias_grad_b);
    EXPECT_EQ(g.backward_weights.bias_length, O);
    expect_close(db, bwd_w.bias_grad, "backward_weights db (BGRADB)", 1e-5);

    // Without BGRADB: the same GEMM with the default epilogue, db by the column sums.
    const GemmPlan plain = gemm::without_fused_bias_grad(g.backward_weights);
    EXPECT_EQ(plain.epilogue, Epilogue::none);
    EXPECT_TRUE(plain.bias_grad_kernel);
    const GemmResult r = run_plan(plain, in);
    EXPECT_TRUE(r.bias_grad.empty());
    expect_close(dw, r.d, "backward_weights dw without BGRADB", 1e-5);
    Vec kernel_db(O, 1e30f);
    const kernels::ColumnSumsPlan db_plan = kernels::plan_column_sums(N, O, 1, kernels::kHostPlanSmCount);
    std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(1, db_plan.partial_size())));
    kernels::column_sums_on_host(db_plan, kernels::ColumnValues<float>{in.dy.data(), O}, partial.data(),
                                 kernels::StoreFloat{kernel_db.data()});
    Ref want(db.begin(), db.end());
    expect_close(kernel_db, want, "column sums db", 1e-5);
  } else {
    EXPECT_EQ(g.forward.epilogue, Epilogue::none);
    EXPECT_EQ(g.backward_weights.epilogue, Epilogue::none);
    EXPECT_FALSE(g.backward_weights.bias_grad_kernel);
  }
}

TEST(GemmPlan, BatchOneMatchesCpu) {
  check_against_cpu(ip(1, 37, 10, true));
  check_against_cpu(ip(1, 5, 23, false));
}

TEST(GemmPlan, MoreInputsThanOutputsMatchesCpu) {
  check_against_cpu(ip(13, 50, 17, true));
  check_against_cpu(ip(6, 33, 3, false));
}

TEST(GemmPlan, FewerInputsThanOutputsMatchesCpu) {
  check_against_cpu(ip(7, 3, 26, true));
  check_against_cpu(ip(5, 17, 33, false));
}

TEST(GemmPlan, DegenerateSizesMatchCpu) {
  check_against_cpu(ip(3, 1, 1, true));
  check_against_cpu(ip(1, 1, 9, true));
  check_against_cpu(ip(19, 1, 1, false));
}

TEST(GemmPlan, OperandRolesAndTransposes) {
  const auto g = gemm::plan_inner_product(ip(4, 37, 10, true), false);
  // forward: D = y^T [10, 4] = (w stored [37, 10])^T (x stored [37, 4])
  EXPECT_EQ(
      g.forward.to_string(),
      "m 10 n 4 k 37, A w T ld 37, B x N ld 37, D y ld 10, f32 x f32 -> f32, compute 32F, bias epilogue (f32, 10)");
  EXPECT_EQ(g.backward_data.to_string(),
            "m 37 n 4 k 10, A w N ld 37, B dy N ld 10, D dx ld 37, f32 x f32 -> f32, compute 32F");
  EXPECT_EQ(
      g.backward_weights.to_string(),
      "m 37 n 10 k 4, A x N ld 37, B dy T ld 10, D dw ld 37, f32 x f32 -> f32, compute 32F, bgradb epilogue (f32, "
      "10)");
  EXPECT_EQ(g.forward.label(), "dense fwd");
  EXPECT_EQ(g.backward_data.label(), "dense bwd-data");
  EXPECT_EQ(g.backward_weights.label(), "dense bwd-weights");
}

TEST(GemmPlan, F32ComputesWithoutTf32UnlessAllowed) {
  for (bool tf32 : {false, true}) {
    const auto g = gemm::plan_inner_product(ip(4, 8, 6, true), tf32);
    const ComputeType want = tf32 ? ComputeType::f32_fast_tf32 : ComputeType::f32;
    for (const GemmPlan* p : {&g.forward, &g.backward_data, &g.backward_weights}) {
      SCOPED_TRACE(p->label());
      EXPECT_EQ(p->compute, want);
      EXPECT_EQ(p->a.type, DType::f32);
      EXPECT_EQ(p->b.type, DType::f32);
      EXPECT_EQ(p->d.type, DType::f32);
      EXPECT_EQ(p->scale_type, DType::f32);
    }
    EXPECT_EQ(g.forward.bias_type, DType::f32);
    EXPECT_FALSE(g.forward.bias_cast);
    EXPECT_EQ(gemm::bias_staging_bytes(g.forward), 0);
  }
}

// bf16 and f16: tensor cores with f32 accumulation whatever allow_tf32 says; y and dx in the storage
// type, dw in f32; the forward bias is cast to the storage type (cuBLASLt's bias has D's type); the
// bias gradient is f32 (D's type in backward_weights).
TEST(GemmPlan, HalfTypesAccumulateInF32) {
  for (DType t : {DType::bf16, DType::f16})
    for (bool tf32 : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (tf32 ? " tf32" : ""));
      const auto g = gemm::plan_inner_product(ip(3, 9, 5, true, t), tf32);
      for (const GemmPlan* p : {&g.forward, &g.backward_data, &g.backward_weights}) {
        EXPECT_EQ(p->compute, ComputeType::f32);
        EXPECT_EQ(p->a.type, t);
        EXPECT_EQ(p->b.type, t);
        EXPECT_EQ(p->scale_type, DType::f32);
      }
      EXPECT_EQ(g.forward.d.type, t);
      EXPECT_EQ(g.backward_data.d.type, t);
      EXPECT_EQ(g.backward_weights.d.type, DType::f32);
      EXPECT_EQ(g.forward.epilogue, Epilogue::bias);
      EXPECT_EQ(g.forward.bias_type, t);
      EXPECT_TRUE(g.forward.bias_cast);
      EXPECT_EQ(gemm::bias_staging_bytes(g.forward), 5 * 2);
      EXPECT_EQ(g.backward_weights.epilogue, Epilogue::bias_grad_b);
      EXPECT_EQ(g.backward_weights.bias_type, DType::f32);
    }
  EXPECT_EQ(gemm::compute_type(DType::bf16, true), ComputeType::f32);
  EXPECT_EQ(gemm::compute_type(DType::f32, true), ComputeType::f32_fast_tf32);
  EXPECT_EQ(gemm::compute_type(DType::f32, false), ComputeType::f32);
}

TEST(GemmPlan, ImpossibleShapesThrowNamingTheShape) {
  for (const InnerProductShape& s : {ip(0, 3, 4, true), ip(2, 3, 0, false), ip(2, 3, 4, true, DType::u8)}) {
    const std::string err = testing::error_of([&] { gemm::plan_inner_product(s, false); });
    EXPECT_NE(err.find(s.to_string()), std::string::npos) << err;
  }
}

TEST(GemmPlan, HeuristicKeyNamesEverythingTheHeuristicSees) {
  const auto key = [](const InnerProductShape& s, bool tf32, bool det, int64_t ws, AlignmentVariant v) {
    return gemm::heuristic_key(gemm::plan_inner_product(s, tf32).forward, gemm::reduction_scheme_mask(det), ws, v);
  };
  const auto base = ip(8, 37, 10, true);
  const std::string k0 = key(base, false, true, 1 << 20, AlignmentVariant::vector);
  EXPECT_EQ(k0, "10x8x37|TN|37,37,10|f32,f32,f32,f32|32F|bias:f32|align16,16,16,16|red0|ws1048576");
  EXPECT_EQ(k0, key(base, false, true, 1 << 20, AlignmentVariant::vector));  // stable
  EXPECT_NE(k0, key(ip(9, 37, 10, true), false, true, 1 << 20, AlignmentVariant::vector));
  EXPECT_NE(k0, key(ip(8, 37, 10, false), false, true, 1 << 20, AlignmentVariant::vector));
  EXPECT_NE(k0, key(ip(8, 37, 10, true, DType::bf16), false, true, 1 << 20, AlignmentVariant::vector));
  EXPECT_NE(k0, key(base, true, true, 1 << 20, AlignmentVariant::vector));
  EXPECT_NE(k0, key(base, false, false, 1 << 20, AlignmentVariant::vector));
  EXPECT_NE(k0, key(base, false, true, 2 << 20, AlignmentVariant::vector));
  EXPECT_NE(k0, key(base, false, true, 1 << 20, AlignmentVariant::element));
  EXPECT_EQ(key(base, false, true, 1 << 20, AlignmentVariant::element),
            "10x8x37|TN|37,37,10|f32,f32,f32,f32|32F|bias:f32|align4,4,4,4|red0|ws1048576");
  // The three directions of one shape are different GEMMs.
  const auto g = gemm::plan_inner_product(base, false);
  const std::string kd = gemm::heuristic_key(g.backward_data, 0, 1 << 20, AlignmentVariant::vector);
  const std::string kw = gemm::heuristic_key(g.backward_weights, 0, 1 << 20, AlignmentVariant::vector);
  EXPECT_NE(k0, kd);
  EXPECT_NE(k0, kw);
  EXPECT_NE(kd, kw);
  // Equal GEMMs share a key whatever direction they come from: forward of {in 6, out 5, no bias} at
  // batch 4 is m 5 n 4 k 6 with A^T; backward_data of {batch 4, in 5, out 6} is m 5 n 4 k 6 with A^N.
  const auto f = gemm::plan_inner_product(ip(4, 6, 5, false), false).forward;
  const auto d = gemm::plan_inner_product(ip(4, 5, 6, false), false).backward_data;
  EXPECT_NE(gemm::heuristic_key(f, 0, 0, AlignmentVariant::vector),
            gemm::heuristic_key(d, 0, 0, AlignmentVariant::vector));
  GemmPlan f_as_d = f;
  f_as_d.direction = gemm::Direction::backward_data;
  EXPECT_EQ(gemm::heuristic_key(f, 0, 0, AlignmentVariant::vector),
            gemm::heuristic_key(f_as_d, 0, 0, AlignmentVariant::vector));
}

TEST(GemmPlan, WorkspacePreferenceLeavesRoomForTheStagedBias) {
  const int64_t mib = int64_t{1} << 20;
  EXPECT_EQ(gemm::max_algorithm_workspace(512 * mib, 0), 512 * mib);
  EXPECT_EQ(gemm::max_algorithm_workspace(512 * mib, 20), 512 * mib - 256);
  EXPECT_EQ(gemm::max_algorithm_workspace(512 * mib, 257), 512 * mib - 512);
  EXPECT_EQ(gemm::max_algorithm_workspace(1000, 0), 768);  // whole 256-byte units only
  EXPECT_EQ(gemm::max_algorithm_workspace(0, 0), 0);
  EXPECT_EQ(gemm::max_algorithm_workspace(256, 20), 0);
  EXPECT_EQ(gemm::round_up_workspace(0), 0);
  EXPECT_EQ(gemm::round_up_workspace(1), 256);
  EXPECT_EQ(gemm::round_up_workspace(256), 256);
  EXPECT_EQ(gemm::round_up_workspace(257), 512);
}

TEST(GemmPlan, DeterministicModeAllowsNoSplitK) {
  EXPECT_EQ(gemm::reduction_scheme_mask(true), gemm::reduction::none);
  EXPECT_EQ(gemm::reduction_scheme_mask(false), gemm::reduction::all);
  using C = gemm::HeuristicCandidate;
  const int64_t ws = 1 << 20;
  // cuBLASLt lists candidates fastest first: take the first that ran, fits and obeys the mask.
  const std::vector<C> cands{
      {false, 0, gemm::reduction::none, 1},            // failed
      {true, 2 << 20, gemm::reduction::none, 1},       // too much workspace
      {true, 4096, gemm::reduction::inplace, 4},       // split-K, in place
      {true, 4096, gemm::reduction::compute_type, 2},  // split-K, separate reduction
      {true, 0, gemm::reduction::none, 3},             // split-K claimed without a reduction scheme
      {true, 0, gemm::reduction::none, 1},             // one sequence
  };
  EXPECT_EQ(gemm::choose_heuristic(cands, ws, gemm::reduction_scheme_mask(true)), 5);
  EXPECT_EQ(gemm::choose_heuristic(cands, ws, gemm::reduction_scheme_mask(false)), 2);
  EXPECT_EQ(gemm::choose_heuristic(cands, 0, gemm::reduction_scheme_mask(false)), 4);
  EXPECT_EQ(gemm::choose_heuristic({}, ws, gemm::reduction::all), -1);
  EXPECT_EQ(gemm::choose_heuristic({{true, 0, gemm::reduction::output_type, 2}}, ws, gemm::reduction::none), -1);
}

// run.cudnn_algorithms = auto on cuBLASLt: the heuristic's candidates timed, the fastest allowed wins,
// split-K kept out when deterministic (by the same rules as the heuristic's choice).
TEST(GemmPlan, TimedChoiceIsTheFastestAllowedCandidate) {
  using C = gemm::HeuristicCandidate;
  const int64_t ws = 1 << 20;
  const std::vector<C> cands{
      {true, 0, gemm::reduction::none, 1, 0.30f},             // the heuristic's first
      {true, 4096, gemm::reduction::inplace, 4, 0.05f},       // split-K: fastest, not deterministic
      {true, 2 << 20, gemm::reduction::none, 1, 0.01f},       // too much workspace
      {false, 0, gemm::reduction::none, 1, 0.01f},            // failed
      {true, 0, gemm::reduction::none, 1, 0.20f},             // the fastest deterministic
      {true, 0, gemm::reduction::none, 1, 0.20f},             // a tie goes to the earlier
      {true, 0, gemm::reduction::none, 1, -1.0f},             // untimed
  };
  EXPECT_EQ(gemm::choose_timed(cands, ws, gemm::reduction_scheme_mask(true)), 4);
  EXPECT_EQ(gemm::choose_timed(cands, ws, gemm::reduction_scheme_mask(false)), 1);
  EXPECT_EQ(gemm::choose_heuristic(cands, ws, gemm::reduction_scheme_mask(true)), 0);
  EXPECT_EQ(gemm::choose_timed({{true, 0, gemm::reduction::none, 1, -1.0f}}, ws, gemm::reduction::all), -1);
  EXPECT_TRUE(cands[0].deterministic());
  EXPECT_FALSE(cands[1].deterministic());
  EXPECT_FALSE((C{true, 0, gemm::reduction::none, 3}).deterministic());
}

// The key of a pinned GEMM record: what the algorithm depends on, not the mask or the workspace
// (those are checked against the record), and the alignment variant apart.
TEST(GemmPlan, ProblemKeyLeavesOutMaskAndWorkspace) {
  const gemm::GemmPlan f = gemm::plan_inner_product(ip(8, 37, 10, true), false).forward;
  const std::string k = gemm::problem_key(f, AlignmentVariant::vector);
  EXPECT_EQ(k, "10x8x37|TN|37,37,10|f32,f32,f32,f32|32F|bias:f32|align16,16,16,16");
  EXPECT_EQ(gemm::heuristic_key(f, 0, 5, AlignmentVariant::vector).rfind(k, 0), 0u);
  EXPECT_NE(k, gemm::problem_key(f, AlignmentVariant::element));
  EXPECT_NE(k, gemm::problem_key(gemm::plan_inner_product(ip(8, 37, 10, true), true).forward, AlignmentVariant::vector));
}

TEST(GemmPlan, PointerAlignment) {
  EXPECT_EQ(gemm::pointer_alignment(0), 256);
  EXPECT_EQ(gemm::pointer_alignment(1), 1);
  EXPECT_EQ(gemm::pointer_alignment(2), 2);
  EXPECT_EQ(gemm::pointer_alignment(24), 8);
  EXPECT_EQ(gemm::pointer_alignment(0x7f0000001040), 64);
  EXPECT_EQ(gemm::pointer_alignment(0x7f0000100000), 256);
  EXPECT_EQ(gemm::min_alignment(DType::bf16, AlignmentVariant::element), 2);
  EXPECT_EQ(gemm::min_alignment(DType::f32, AlignmentVariant::element), 4);
  EXPECT_EQ(gemm::min_alignment(DType::f16, AlignmentVariant::vector), 16);

  // A weight at element 10 of a flat f32 parameter buffer is 8-byte aligned: the element variant.
  alignas(256) static float flat[64];
  EXPECT_EQ(gemm::variant_for({flat, flat + 16, nullptr}), AlignmentVariant::vector);
  EXPECT_EQ(gemm::variant_for({flat, flat + 10}), AlignmentVariant::element);
  EXPECT_EQ(gemm::variant_for({}), AlignmentVariant::vector);
}

}  // namespace
}  // namespace scaletrain
