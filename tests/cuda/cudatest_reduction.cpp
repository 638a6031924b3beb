// The reduction primitive (kernels/reduction.hpp) on the CUDA backend against the host's loops for
// the same plan (the device's SM count): column sums of f32 and bf16 from one row to resnet50's
// first BatchNorm at batch 64, BatchNorm's gradient terms, the non-finite count (exact), and the
// per-segment sums and sums of squares of resnet50-like segments (kernels/segment_sums.hpp). The
// block reductions add in the host's order; nvcc may contract a source's multiply into the shift's
// subtraction, so sums agree to rounding (1e-6 of the sum of magnitudes), counts exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/kernels/batch_norm.hpp"
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/segment_sums.hpp"
#include "scaletrain/kernels/step_state.hpp"

using namespace scaletrain;
using namespace scaletrain::kernels;
using namespace scaletrain::testing;

namespace {

class CudaReduction : public CudaTest {};

template <class T>
std::vector<T> random_stored(int64_t n, float offset, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = from_float<T>(offset + d(gen));
  return v;
}

// The host's column sums by `plan`, through the loops cpu and sim run.
template <class Source>
std::vector<double> host_sums(const ColumnSumsPlan& plan, const Source& src) {
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(1, plan.partial_size())));
  std::vector<double> out(static_cast<size_t>(plan.width * plan.cols));
  column_sums_on_host(plan, src, partial.data(), StoreDouble{out.data()});
  return out;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double magnitude,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < got.size(); ++k)
    ASSERT_NEAR(got[k], want[k], 1e-6 * magnitude + 1e-12) << what << ": sum " << k;
}

template <class T>
void check_column_values(Backend& b, int64_t rows, int64_t cols, float offset) {
  const std::vector<T> x = random_stored<T>(rows * cols, offset, 7);
  const Tensor xd = to_device(b, x, "x");
  const ColumnSumsPlan plan = plan_column_sums(rows, cols, 1, b.multiprocessor_count());
  Tensor partial = b.empty({std::max<int64_t>(1, plan.partial_size())}, DType::f64, "partial");
  Tensor out = b.empty({cols}, DType::f64, "out");
  launch_column_sums(b.compute_stream(), "sums", plan, ColumnValues<T>{dptr<T>(xd), cols}, dptr<double>(partial),
                     StoreDouble{dptr<double>(out)});
  const std::vector<double> want = host_sums(plan, ColumnValues<T>{x.data(), cols});
  const double magnitude = static_cast<double>(rows) * (std::fabs(offset) + 1.0);
  expect_close(to_host<double>(b, out), want, magnitude,
               std::to_string(rows) + " x " + std::to_string(cols) + " (" + std::to_string(plan.passes()) + " passes)");
}

TEST_F(CudaReduction, ColumnSumsMatchTheHostOrder) {
  Backend& b = *backend;
  for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {1, 70}, {37, 3}, {5000, 1}, {2049, 64}, {12544, 2048}, {int64_t{64} * 112 * 112, 64}}) {
    check_column_values<float>(b, rows, cols, 0.0f);
    check_column_values<bf16>(b, rows, cols, 0.0f);
  }
  check_column_values<float>(b, 50000, 16, 1.0e4f);
}

TEST_F(CudaReduction, BatchNormGradientSumsMatchTheHostOrder) {
  Backend& b = *backend;
  const int64_t rows = 25088, cols = 256;
  const std::vector<float> x = random_stored<float>(rows * cols, 0.5f, 1), dy = random_stored<float>(rows * cols, 0, 2);
  const std::vector<float> mean(cols, 0.5f), invstd(cols, 1.5f);
  const Tensor xd = to_device(b, x, "x"), dyd = to_device(b, dy, "dy");
  const Tensor md = to_device(b, mean, "mean"), id = to_device(b, invstd, "invstd");
  const ColumnSumsPlan plan = plan_column_sums(rows, cols, 2, b.multiprocessor_count());
  Tensor partial = b.empty({std::max<int64_t>(1, plan.partial_size())}, DType::f64, "partial");
  Tensor sums = b.empty({2 * cols}, DType::f64, "sums");
  Tensor dw = b.empty({cols}, DType::f32, "dw"), db = b.empty({cols}, DType::f32, "db");
  launch_column_sums(b.compute_stream(), "bn_gradient_sums", plan,
                     BnGradientTerms<float>{dptr<float>(xd), dptr<float>(xd), dptr<float>(dyd), dptr<float>(md),
                                            dptr<float>(id), cols, true},
                     dptr<double>(partial), BnGradientSums{dptr<double>(sums), dptr<float>(dw), dptr<float>(db), cols});
  const std::vector<double> want = host_sums(
      plan, BnGradientTerms<float>{x.data(), x.data(), dy.data(), mean.data(), invstd.data(), cols, true});
  expect_close(to_host<double>(b, sums), want, static_cast<double>(rows) * 2.0, "BatchNorm gradient sums");
}

// The step's inf/NaN verdict (kernels/step_state.hpp's layout): each gradient tensor's count exactly,
// the loss as the rank's mark, the injected flag cleared.
TEST_F(CudaReduction, CountsNonFiniteValuesExactly) {
  Backend& b = *backend;
  const int64_t n = 5'000'003, split = 1'000'000, n_loss = 300;
  std::vector<float> g = random_stored<float>(n, 0, 3), l = random_stored<float>(n_loss, 0, 4);
  double bad[2] = {0, 0};
  for (int64_t i = 0; i < n; i += 7919) {
    g[static_cast<size_t>(i)] = (i / 7919) % 2 ? INFINITY : NAN;
    bad[i < split ? 0 : 1] += 1;
  }
  l[17] = NAN;
  const Tensor gd = to_device(b, g, "g"), ld = to_device(b, l, "l");
  const std::vector<int64_t> offsets{0, split, n, n + n_loss};
  const SegmentSumsPlan plan = plan_segment_sums(offsets, 1, b.multiprocessor_count());
  const Tensor td = to_device(b, segment_tables(plan, offsets), "tables");
  Tensor partial = b.empty({plan.partial_size()}, DType::f64, "partial");
  const Tensor out = to_device(b, std::vector<double>{-1, -1, -1, 7}, "verdict");
  launch_segment_sums(b.compute_stream(), "count_nonfinite", plan, SegmentTables::in(dptr<int64_t>(td), 3),
                      NonFiniteFlags{dptr<float>(gd), n, 2, dptr<float>(ld)}, dptr<double>(partial),
                      StoreVerdict{dptr<double>(out), VerdictLayout{2}, 5.0});
  EXPECT_EQ(to_host<double>(b, out), (std::vector<double>{bad[0], bad[1], 5.0, 0.0}));
}

// Segments from empty to millions of elements (a large model's tensors), sums of bf16 values and sums
// of squares of f32 values, against the host's loops for the device's plan.
TEST_F(CudaReduction, SegmentSumsMatchTheHostOrder) {
  Backend& b = *backend;
  const std::vector<int64_t> sizes{64, 0, 9408, 1, 2'359'296, 256, 7, 4'194'304, 1000};
  std::vector<int64_t> offsets{0};
  for (const int64_t n : sizes) offsets.push_back(offsets.back() + n);
  const int64_t segments = static_cast<int64_t>(sizes.size()), total = offsets.back();
  const SegmentSumsPlan plan = plan_segment_sums(offsets, 1, b.multiprocessor_count());
  const std::vector<int64_t> table = segment_tables(plan, offsets);
  const Tensor td = to_device(b, table, "tables");
  const SegmentTables t = SegmentTables::in(dptr<int64_t>(td), segments);
  const std::vector<bf16> xb = random_stored<bf16>(total, 0.5f, 5);
  const std::vector<float> xf = random_stored<float>(total, 0.0f, 6);
  const Tensor xbd = to_device(b, xb, "xb"), xfd = to_device(b, xf, "xf");
  Tensor partial = b.empty({std::max<int64_t>(1, plan.partial_size())}, DType::f64, "partial");
  Tensor out = b.empty({2 * segments}, DType::f64, "out");
  launch_segment_sums(b.compute_stream(), "sums", plan, t, Values<bf16>{dptr<bf16>(xbd)}, dptr<double>(partial),
                      StoreDouble{dptr<double>(out)});
  launch_segment_sums(b.compute_stream(), "squares", plan, t, SquaredValues<float>{dptr<float>(xfd)},
                      dptr<double>(partial), StoreDouble{dptr<double>(out) + segments});
  std::vector<double> host_partial(static_cast<size_t>(std::max<int64_t>(1, plan.partial_size())));
  std::vector<double> want(static_cast<size_t>(2 * segments));
  const SegmentTables ht = SegmentTables::in(table.data(), segments);
  const auto on_host = [&](auto src, double* sink) {
    const SegmentSumsBlock<decltype(src)> blocks{plan, ht, src, host_partial.data()};
    for (int64_t k = 0; k < plan.blocks; ++k) blocks(k);
    const SegmentSumsFinish<StoreDouble> finish{host_partial.data(), ht.first_block, segments, 1, StoreDouble{sink}};
    for (int64_t k = 0; k < segments; ++k) finish(k);
  };
  on_host(Values<bf16>{xb.data()}, want.data());
  on_host(SquaredValues<float>{xf.data()}, want.data() + segments);
  expect_close(to_host<double>(b, out), want, 1.5 * static_cast<double>(*std::max_element(sizes.begin(), sizes.end())),
               "segment sums");
}

}  // namespace
