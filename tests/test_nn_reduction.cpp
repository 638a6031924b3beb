// The reduction primitive (kernels/reduction.hpp): its plans spread resnet50's BatchNorm sums over
// every SM, and no reduction over more than a million elements runs on fewer blocks than SMs; its
// column sums match float64 references from one row to resnet50's largest BatchNorm shape (at batch
// 256), with one and two passes and a large offset; cpu and the simulated device agree bitwise. The
// per-segment sums (kernels/segment_sums.hpp) likewise, over segments from empty to 100,000 elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/kernels/batch_norm.hpp"
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/segment_sums.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/device_tensors.hpp"

using namespace scaletrain;
using scaletrain::testing::on_device;
using scaletrain::testing::to_host;

namespace {

// A value per (row, col) that a hash spreads over [offset - 1, offset + 1).
float value_at(int64_t r, int64_t c, float offset) {
  uint64_t h = static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(c) * 0xBF58476D1CE4E5B9ull;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 29;
  return offset + static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 23)) - 1.0f;
}

Tensor matrix(Backend& b, int64_t rows, int64_t cols, float offset) {
  Tensor t = b.empty({rows, cols}, DType::f32, "x");
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(r * cols + c)] = value_at(r, c, offset);
  b.upload(t, v);
  return t;
}

// The column sums of x [rows, cols] by `plan` on b, read back.
std::vector<double> column_sums(Backend& b, const Tensor& x, const kernels::ColumnSumsPlan& plan) {
  Tensor partial = b.empty({std::max<int64_t>(1, plan.partial_size())}, DType::f64, "partial");
  Tensor out = b.empty({plan.cols}, DType::f64, "sums");
  launch_column_sums(b.compute_stream(), "sums", plan, kernels::ColumnValues<float>{x.device_data<float>(), plan.cols},
                     partial.device_data<double>(), kernels::StoreDouble{out.device_data<double>()});
  const Tensor h = b.download(out);
  return {h.data<double>(), h.data<double>() + plan.cols};
}

std::unique_ptr<Backend> sim_backend() {
  BackendOptions o;
  o.kind = DeviceKind::sim;
  return make_sim_backend(o);
}

TEST(ReductionPlan, SpreadsResnet50BatchNormsOverEverySm) {
  constexpr int kSms = 132;
  constexpr int64_t kBatch = 256;
  auto model = nn::make_zoo_model("resnet50", {224, 224, 3}, 1000);
  int checked = 0;
  for (const auto& layer : model->layers()) {
    if (layer->type() != "BatchNormalization") continue;
    const Shape& in = layer->input_shape();
    const int64_t channels = in.back(), rows = kBatch * shape_numel(in) / channels;
    for (int width : {1, 2}) {
      const kernels::ColumnSumsPlan p = kernels::plan_column_sums(rows, channels, width, kSms);
      EXPECT_GE(p.blocks(), 2 * kSms) << layer->name() << " [" << rows << ", " << channels << "] x " << width;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 53);  // resnet50's BatchNorms
}

TEST(ReductionPlan, CoversTheShapeWithinTheGridAndSpreadsLargeReductions) {
  for (int sms : {1, 80, 132}) {
    for (int64_t rows = 1; rows <= (int64_t{1} << 26); rows = rows * 3 + 1) {
      for (int64_t cols : {1, 2, 3, 16, 31, 33, 64, 100, 256, 1000, 2048, 4096}) {
        const kernels::ColumnSumsPlan p = kernels::plan_column_sums(rows, cols, 2, sms);
        const std::string what = std::to_string(rows) + " x " + std::to_string(cols) + " on " + std::to_string(sms);
        ASSERT_EQ(p.tile_x * p.lanes, kernels::kReductionThreads) << what;
        ASSERT_GE(p.col_tiles * p.tile_x, cols) << what;
        ASSERT_LT((p.col_tiles - 1) * p.tile_x, cols) << what;
        ASSERT_GE(p.row_blocks * p.rows_per_block, rows) << what;
        ASSERT_LT((p.row_blocks - 1) * p.rows_per_block, rows) << what;  // no empty block
        ASSERT_LE(p.row_blocks, 65535) << what;
        if (rows * cols > (int64_t{1} << 20)) {
          ASSERT_GE(p.blocks(), sms) << what << ": " << p.blocks() << " blocks";
        }
      }
    }
  }
}

TEST(ReductionPlan, RejectsAnEmptyShape) {
  EXPECT_THROW(kernels::plan_column_sums(0, 4, 1, 132), Error);
  EXPECT_THROW(kernels::plan_column_sums(4, 0, 1, 132), Error);
}

struct Case {
  int64_t rows, cols;
  int sms;
  float offset;
};

class ColumnSums : public ::testing::TestWithParam<Case> {};

TEST_P(ColumnSums, MatchFloat64AndSimAgreesBitwise) {
  const Case k = GetParam();
  const kernels::ColumnSumsPlan plan = kernels::plan_column_sums(k.rows, k.cols, 1, k.sms);
  auto cpu = make_cpu_backend();
  auto sim = sim_backend();
  const std::vector<double> got = column_sums(*cpu, matrix(*cpu, k.rows, k.cols, k.offset), plan);
  const std::vector<double> sim_got = column_sums(*sim, matrix(*sim, k.rows, k.cols, k.offset), plan);
  ASSERT_EQ(std::memcmp(got.data(), sim_got.data(), got.size() * sizeof(double)), 0) << "cpu and sim differ";
  for (int64_t c = 0; c < k.cols; ++c) {
    double want = 0.0;
    for (int64_t r = 0; r < k.rows; ++r) want += value_at(r, c, k.offset);
    // f32 lanes over shifted values whose spread is 2: the error grows with the rows of a lane, not
    // with the offset.
    const double tol = 4e-7 * 2.0 * static_cast<double>(k.rows) + 1e-9 * std::fabs(want);
    ASSERT_NEAR(got[static_cast<size_t>(c)], want, tol) << "column " << c << " of " << k.rows << " x " << k.cols
                                                        << " (" << plan.passes() << " passes)";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ColumnSums,
                         ::testing::Values(Case{1, 1, 132, 0.0f}, Case{1, 7, 132, 0.0f}, Case{5, 3, 132, 0.0f},
                                           Case{300, 1, 132, 0.0f}, Case{4097, 1, 132, 0.0f},
                                           Case{2049, 64, 132, 0.0f}, Case{1000, 33, 1, 0.0f},
                                           Case{12544, 2048, 132, 0.0f}, Case{50000, 16, 132, 1.0e4f},
                                           Case{3001, 100, 1000, 0.0f}));

// resnet50's first BatchNorm at batch 256 ([256 * 112 * 112, 64]: 205 million elements), on the CPU.
TEST(ColumnSumsLargest, Resnet50FirstBatchNormAtBatch256MatchesFloat64) {
  constexpr int64_t kRows = int64_t{256} * 112 * 112, kCols = 64;
  auto cpu = make_cpu_backend();
  const kernels::ColumnSumsPlan plan = kernels::plan_column_sums(kRows, kCols, 1, kernels::kHostPlanSmCount);
  Tensor x = cpu->empty({kRows, kCols}, DType::f32, "x");
  std::vector<double> want(kCols, 0.0);
  float* v = x.data<float>();
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) {
      // Cheaper than value_at at this size: a linear congruential pattern in [0.5, 1.5).
      const float f = 0.5f + static_cast<float>((r * 7919 + c * 104729) % 65536) / 65536.0f;
      v[r * kCols + c] = f;
      want[static_cast<size_t>(c)] += f;
    }
  const std::vector<double> got = column_sums(*cpu, x, plan);
  for (int64_t c = 0; c < kCols; ++c)
    ASSERT_NEAR(got[static_cast<size_t>(c)], want[static_cast<size_t>(c)], 1e-6 * want[static_cast<size_t>(c)])
        << "column " << c;
}

// The BatchNorm gradient terms (two values per element) and the sinks that also write the count and
// the parameter gradients: cpu and sim bitwise, against float64.
TEST(ColumnSums, BatchNormGradientSumsMatchFloat64OnCpuAndSim) {
  constexpr int64_t kRows = 6000, kCols = 48;
  std::vector<double> results[2];
  for (int i = 0; i < 2; ++i) {
    const std::unique_ptr<Backend> backend = i == 0 ? make_cpu_backend() : sim_backend();
    Backend& b = *backend;
    const Tensor x = matrix(b, kRows, kCols, 3.0f), dy = matrix(b, kRows, kCols, 0.0f);
    Tensor mean = b.empty({kCols}, DType::f32, "mean"), invstd = b.empty({kCols}, DType::f32, "invstd");
    b.upload(mean, std::vector<float>(kCols, 3.0f));
    b.upload(invstd, std::vector<float>(kCols, 2.0f));
    const kernels::ColumnSumsPlan plan = kernels::plan_column_sums(kRows, kCols, 2, b.multiprocessor_count());
    ASSERT_EQ(plan.passes(), 2);
    Tensor partial = b.empty({plan.partial_size()}, DType::f64, "partial");
    Tensor sums = b.empty({2 * kCols}, DType::f64, "sums");
    Tensor dw = b.empty({kCols}, DType::f32, "dw"), db = b.empty({kCols}, DType::f32, "db");
    launch_column_sums(b.compute_stream(), "bn_gradient_sums", plan,
                       kernels::BnGradientTerms<float>{x.device_data<float>(), x.device_data<float>(),
                                                       dy.device_data<float>(), mean.device_data<float>(),
                                                       invstd.device_data<float>(), kCols, false},
                       partial.device_data<double>(),
                       kernels::BnGradientSums{sums.device_data<double>(), dw.device_data<float>(),
                                               db.device_data<float>(), kCols});
    const Tensor h = b.download(sums), hw = b.download(dw), hb = b.download(db);
    results[i].assign(h.data<double>(), h.data<double>() + 2 * kCols);
    for (int64_t c = 0; c < kCols; ++c) {
      double g = 0.0, gx = 0.0;
      for (int64_t r = 0; r < kRows; ++r) {
        const double d = value_at(r, c, 0.0f), xhat = (static_cast<double>(value_at(r, c, 3.0f)) - 3.0) * 2.0;
        g += d;
        gx += d * xhat;
      }
      EXPECT_NEAR(h.data<double>()[c], g, 2e-3) << "sum g, column " << c;
      EXPECT_NEAR(h.data<double>()[kCols + c], gx, 4e-3) << "sum g * xhat, column " << c;
      EXPECT_EQ(hb.data<float>()[c], static_cast<float>(h.data<double>()[c]));
      EXPECT_EQ(hw.data<float>()[c], static_cast<float>(h.data<double>()[kCols + c]));
    }
  }
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(double)), 0);
}

// The non-finite count of gradients and losses, two segments of one per-segment sum: exact.
TEST(SegmentSums, CountNonFiniteValuesOfTwoTensorsExactly) {
  auto b = make_cpu_backend();
  constexpr int64_t kN = 3'000'001, kLoss = 7;
  std::vector<float> g(kN, 1.0f), l(kLoss, 0.5f);
  int64_t bad = 0;
  for (int64_t i = 0; i < kN; i += 9973, ++bad) g[static_cast<size_t>(i)] = (i % 2) ? INFINITY : NAN;
  l[3] = -INFINITY;
  Tensor gd = b->empty({kN}, DType::f32, "g"), ld = b->empty({kLoss}, DType::f32, "l");
  b->upload(gd, g);
  b->upload(ld, l);
  const std::vector<int64_t> offsets{0, kN, kN + kLoss};
  const kernels::SegmentSumsPlan plan = kernels::plan_segment_sums(offsets, 1, b->multiprocessor_count());
  const std::vector<int64_t> table = kernels::segment_tables(plan, offsets);
  Tensor partial = b->empty({plan.partial_size()}, DType::f64, "partial"), out = b->empty({2}, DType::f64, "out");
  launch_segment_sums(b->compute_stream(), "count_nonfinite", plan, kernels::SegmentTables::in(table.data(), 2),
                      kernels::NonFiniteFlags{gd.device_data<float>(), kN, 1, ld.device_data<float>()},
                      partial.device_data<double>(), kernels::StoreDouble{out.device_data<double>()});
  EXPECT_EQ(out.data<double>()[0], static_cast<double>(bad));
  EXPECT_EQ(out.data<double>()[1], 1.0);
}

// Each pass of a plan is one counted call.
TEST(ColumnSums, CountsACallPerPass) {
  auto sim = sim_backend();
  const Tensor x = matrix(*sim, 100000, 8, 0.0f);
  Tensor partial = sim->empty({100000}, DType::f64, "partial"), out = sim->empty({8}, DType::f64, "out");
  for (int sms : {1, 132}) {
    const kernels::ColumnSumsPlan plan = kernels::plan_column_sums(100000, 8, 1, sms);
    const int64_t before = sim->counters().read().calls;
    launch_column_sums(sim->compute_stream(), "sums", plan, kernels::ColumnValues<float>{x.device_data<float>(), 8},
                       partial.device_data<double>(), kernels::StoreDouble{out.device_data<double>()});
    EXPECT_EQ(sim->counters().read().calls - before, plan.passes()) << sms << " SMs";
    sim->compute_stream().synchronize();
  }
}

TEST(SegmentSumsPlan, SpreadsLargeBuffersOverEverySmAndCoversEachSegment) {
  for (const int64_t total : {int64_t{1} << 20, int64_t{25'557'032}, int64_t{1} << 31})
    for (const int64_t pieces : {int64_t{1}, int64_t{161}, int64_t{4096}}) {
      std::vector<int64_t> offsets{0};
      for (int64_t s = 1; s <= pieces; ++s) offsets.push_back(total * s * s / (pieces * pieces));  // uneven sizes
      for (const int sms : {1, 108, 132}) {
        const kernels::SegmentSumsPlan plan = kernels::plan_segment_sums(offsets, 1, sms);
        ASSERT_EQ(plan.chunk % kernels::kReductionThreads, 0);
        if (total > 1'000'000) {
          EXPECT_GE(plan.blocks, sms) << total << " elements in " << pieces << " segments";
        }
        EXPECT_LE(plan.blocks, kernels::kReductionBlocksPerSm * sms + pieces) << total << " in " << pieces;
        const std::vector<int64_t> table = kernels::segment_tables(plan, offsets);
        ASSERT_TRUE(std::equal(offsets.begin(), offsets.end(), table.begin()));
        const kernels::SegmentTables tables = kernels::SegmentTables::in(table.data(), plan.segments);
        const int64_t* first = tables.first_block;
        ASSERT_EQ(first[plan.segments], plan.blocks);
        // Each segment's blocks tile it in order (checked where the segments are few).
        for (int64_t seg = 0; seg < plan.segments && pieces < 200; ++seg) {
          int64_t at = offsets[seg];
          for (int64_t b = first[seg]; b < first[seg + 1]; ++b) {
            int64_t begin = 0, end = 0;
            tables.range(b, plan.segments, plan.chunk, &begin, &end);
            ASSERT_EQ(tables.segment_of(b, plan.segments), seg) << "block " << b;
            ASSERT_TRUE(begin == at && end > begin) << "block " << b << " of segment " << seg;
            at = end;
          }
          ASSERT_EQ(at, offsets[seg + 1]) << "segment " << seg;
        }
      }
    }
}

TEST(SegmentSumsPlan, RejectsOffsetsThatGoBackward) {
  EXPECT_THROW(kernels::plan_segment_sums(std::vector<int64_t>{0, 8, 4}, 1, 132), Error);
  EXPECT_THROW(kernels::plan_segment_sums(std::vector<int64_t>{}, 1, 132), Error);
}

// Sums and sums of squares (per-tensor norms) of segments from empty to 100,000 elements in f32 and
// bf16, at an offset of 100: cpu and sim bitwise, against float64, two calls per launch.
TEST(SegmentSums, MatchFloat64AndSimAgreesBitwise) {
  const std::vector<int64_t> sizes{0, 1, 7, 256, 2049, 100000, 0, 3, 40000};
  std::vector<int64_t> offsets{0};
  for (const int64_t n : sizes) offsets.push_back(offsets.back() + n);
  const int64_t total = offsets.back(), segments = static_cast<int64_t>(sizes.size());
  Tensor x(Shape{total}, DType::f32, "x");
  for (int64_t i = 0; i < total; ++i) x.data<float>()[i] = value_at(i, 0, 100.0f);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    std::vector<double> results[2];
    for (int k = 0; k < 2; ++k) {
      const std::unique_ptr<Backend> backend = k == 0 ? make_cpu_backend() : sim_backend();
      Backend& b = *backend;
      const kernels::SegmentSumsPlan plan = kernels::plan_segment_sums(offsets, 1, b.multiprocessor_count());
      const std::vector<int64_t> table = kernels::segment_tables(plan, offsets);
      Tensor tables_host(Shape{static_cast<int64_t>(table.size())}, DType::i64, "tables");
      std::memcpy(tables_host.data<int64_t>(), table.data(), table.size() * sizeof(int64_t));
      const Tensor tables = on_device(b, tables_host), xd = on_device(b, x, dtype);
      const kernels::SegmentTables t = kernels::SegmentTables::in(tables.device_data<int64_t>(), segments);
      Tensor partial = b.empty({plan.partial_size()}, DType::f64, "partial");
      Tensor sums = b.empty({2 * segments}, DType::f64, "sums");
      double* out = sums.device_data<double>();
      const int64_t calls = b.counters().read().calls;
      const auto launch_both = [&](auto v) {
        using T = decltype(v);
        launch_segment_sums(b.compute_stream(), "sums", plan, t, kernels::Values<T>{xd.device_data<T>()},
                            partial.device_data<double>(), kernels::StoreDouble{out});
        launch_segment_sums(b.compute_stream(), "squares", plan, t, kernels::SquaredValues<T>{xd.device_data<T>()},
                            partial.device_data<double>(), kernels::StoreDouble{out + segments});
      };
      if (dtype == DType::f32) {
        launch_both(float{});
      } else {
        launch_both(bf16{});
      }
      EXPECT_EQ(b.counters().read().calls - calls, 4);
      results[k] = to_host<double>(b, sums);
    }
    ASSERT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(double)), 0)
        << "cpu and sim differ in " << dtype_name(dtype);
    for (int64_t s = 0; s < segments; ++s) {
      double sum = 0.0, squares = 0.0;
      for (int64_t i = offsets[s]; i < offsets[s + 1]; ++i) {
        const double v = dtype == DType::f32 ? x.data<float>()[i] : to_float(from_float<bf16>(x.data<float>()[i]));
        sum += v;
        squares += v * v;
      }
      const double n = static_cast<double>(sizes[static_cast<size_t>(s)]);
      // f32 lanes over values shifted by a block's first: their spread is 2 (squares: 400).
      EXPECT_NEAR(results[0][static_cast<size_t>(s)], sum, 4e-7 * 2.0 * n + 1e-9 * std::fabs(sum)) << "segment " << s;
      EXPECT_NEAR(results[0][static_cast<size_t>(segments + s)], squares, 4e-7 * 400.0 * n + 1e-9 * squares)
          << "squares of segment " << s;
    }
  }
}

}  // namespace
