// The reduction primitive: per-column sums over a [rows, cols] matrix of values that a source
// functor produces, in a fixed order that a host-computed plan sets. The plan splits the rows into
// row blocks and the columns into tiles of tile_x columns; a block of 256 threads (tile_x columns by
// `lanes` lanes) sums one tile of one row block: lane j takes the block's rows first + j,
// first + j + lanes, ... in f32, each value shifted by the block's first row (so a large offset costs
// no precision), then a tree over the lanes (a[j] += a[j + s] for s = lanes / 2, ..., 1) and the
// shift added back in f64 give the block's partial sum. A second pass adds the row blocks' partials
// per column in order, in f64. cpu and sim run this order in loops (ColumnSumsBlock) and agree
// bitwise; a CUDA device runs it as block reductions in shared memory (reduction_device.cuh) and
// agrees to rounding. The plan depends on the device's SM count, so the bits may differ between
// devices of different sizes, never between runs on one.
//
// Per-row reductions over [rows, cols] (softmax, LayerNorm) run `lanes` threads per row (a power of
// two up to 32: a warp's segment on a device) and rows_per_block rows per block of 256 threads. A
// row functor's operator()(Row& row) reduces with row.sum / row.max_arg over the row's columns
// (lane j takes columns j, j + lanes, ...; then a tree over the lanes as above) and writes with
// row.for_each and row.leader(); HostRow runs the same lanes and tree in loops.
//
// A source has `static constexpr int kWidth` (values per element, e.g. 2 for [g, g * xhat]) and
// `load(row, col, float* v)`; a sink has `store(k, double)` for k = w * cols + col. The sums over a
// whole tensor are column sums with one column.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/packs.hpp"

namespace scaletrain::kernels {

// How one column-sum reduction runs. Computed by plan_column_sums from the shape and the SM count.
struct ColumnSumsPlan {
  int64_t rows = 0, cols = 0;
  int width = 1;          // values per element (the source's kWidth)
  int tile_x = 1;         // columns per block (a power of two, at most 32)
  int lanes = 256;        // threads per column in a block: tile_x * lanes = kReductionThreads
  int64_t col_tiles = 0;  // blocks across the columns
  int64_t row_blocks = 0; // blocks along the rows
  int64_t rows_per_block = 0;
  SCALETRAIN_HOST_DEVICE int64_t blocks() const { return col_tiles * row_blocks; }
  // 1: the blocks write the sums; 2: they write partials that a second pass adds per column.
  SCALETRAIN_HOST_DEVICE int passes() const { return row_blocks > 1 ? 2 : 1; }
  // The f64 partial sums of the first of two passes ([row_blocks, width * cols]); 0 with one pass.
  SCALETRAIN_HOST_DEVICE int64_t partial_size() const { return passes() > 1 ? row_blocks * width * cols : 0; }
};

constexpr int kReductionThreads = 256;
// A block takes at least this many rows per lane, so that its tree and partial are amortized.
constexpr int64_t kReductionMinRowsPerLane = 8;
// The row blocks aim at this many blocks per SM (with the column tiles), for latency hiding.
constexpr int64_t kReductionBlocksPerSm = 4;
// The CPU and the simulated device plan as for a device of this many SMs (an H100/H200), so that
// they run one order and agree bitwise.
constexpr int kHostPlanSmCount = 132;

ColumnSumsPlan plan_column_sums(int64_t rows, int64_t cols, int width, int sm_count);

// The host's columns per index of ColumnSumsBlock: whole tiles, at most this many columns.
constexpr int64_t kHostGroupColumns = 256;
inline int64_t host_column_groups(const ColumnSumsPlan& p) {
  const int64_t group = p.cols < kHostGroupColumns ? p.cols : kHostGroupColumns;
  return (p.cols + group - 1) / group;
}

// Sinks of the sums.
struct StoreDouble {
  double* out;
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const { out[k] = v; }
};
struct AddDouble {
  double* out;
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const { out[k] += v; }
};
struct AddDoubleUnless {
  double* out;
  const double* unless;  // nothing is added where *unless > 0
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const {
    if (!(*unless > 0)) out[k] += v;
  }
};
struct StoreFloat {
  float* out;
  SCALETRAIN_HOST_DEVICE void store(int64_t k, double v) const { out[k] = static_cast<float>(v); }
};

// The host's first pass: i over row_blocks x host_column_groups (i = block * groups + group); the
// plan's per-lane order and tree for the group's columns, into `partial` (two passes) or the sink.
template <class Source, class Sink>
struct ColumnSumsBlock {
  static constexpr int W = Source::kWidth;
  ColumnSumsPlan plan;
  Source src;
  double* partial;
  Sink sink;

  void operator()(int64_t i) const {
    const int64_t groups = host_column_groups(plan);
    const int64_t group_cols = plan.cols < kHostGroupColumns ? plan.cols : kHostGroupColumns;
    const int64_t block = i / groups, c0 = (i - block * groups) * group_cols;
    const int64_t nc = c0 + group_cols < plan.cols ? group_cols : plan.cols - c0;
    const int64_t first = block * plan.rows_per_block;
    const int64_t end = first + plan.rows_per_block < plan.rows ? first + plan.rows_per_block : plan.rows;
    const int lanes = plan.lanes;
    // acc[(w * lanes + lane) * nc + c]: lanes * nc <= kReductionThreads / tile_x * kHostGroupColumns.
    float acc[kReductionThreads / 32 * kHostGroupColumns * W];
    float shift[kHostGroupColumns * W];
    float v[W];
    for (int64_t c = 0; c < nc; ++c) {
      src.load(first, c0 + c, v);
      for (int w = 0; w < W; ++w) shift[w * nc + c] = v[w];
    }
    for (int64_t k = 0; k < lanes * nc * W; ++k) acc[k] = 0.0f;
    for (int64_t r0 = first; r0 < end; r0 += lanes) {
      const int64_t n = end - r0 < lanes ? end - r0 : lanes;
      if (nc == 1) {  // one column (a whole tensor's sums): the lanes are the contiguous loop
        for (int64_t j = 0; j < n; ++j) {
          float u[W];  // per element and its W unrolled, so that the compiler keeps it in registers
          src.load(r0 + j, c0, u);
          each_in_pack<W>([&](int w) { acc[w * lanes + j] += u[w] - shift[w]; });
        }
        continue;
      }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < nc; ++c) {
          src.load(r0 + j, c0 + c, v);
          for (int w = 0; w < W; ++w) acc[(w * lanes + j) * nc + c] += v[w] - shift[w * nc + c];
        }
    }
    for (int s = lanes / 2; s > 0; s /= 2)
      for (int w = 0; w < W; ++w)
        for (int64_t k = 0; k < s * nc; ++k) acc[w * lanes * nc + k] += acc[w * lanes * nc + s * nc + k];
    const double count = static_cast<double>(end - first);
    for (int w = 0; w < W; ++w)
      for (int64_t c = 0; c < nc; ++c) {
        const double sum =
            static_cast<double>(acc[w * lanes * nc + c]) + count * static_cast<double>(shift[w * nc + c]);
        const int64_t k = w * plan.cols + c0 + c;
        if (plan.passes() > 1) {
          partial[block * W * plan.cols + k] = sum;
        } else {
          sink.store(k, sum);
        }
      }
  }
};

// The second pass, host and device: k over width * cols, the row blocks' partials in order.
template <class Sink>
struct ColumnSumsFinish {
  const double* partial;
  int64_t row_blocks, stride;
  Sink sink;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t k) const {
    double s = 0.0;
    for (int64_t b = 0; b < row_blocks; ++b) s += partial[b * stride + k];
    sink.store(k, s);
  }
};

// The plan's passes in the calling thread (tests and tools; backend/launch.hpp's launch_column_sums
// runs the same functors through Kokkos): partial holds plan.partial_size() doubles.
template <class Source, class Sink>
void column_sums_on_host(const ColumnSumsPlan& plan, const Source& src, double* partial, const Sink& sink) {
  const ColumnSumsBlock<Source, Sink> blocks{plan, src, partial, sink};
  for (int64_t i = 0; i < plan.row_blocks * host_column_groups(plan); ++i) blocks(i);
  if (plan.passes() == 1) return;
  const ColumnSumsFinish<Sink> finish{partial, plan.row_blocks, plan.width * plan.cols, sink};
  for (int64_t k = 0; k < plan.width * plan.cols; ++k) finish(k);
}

// How a per-row reduction runs: lanes per row and rows per block, from the row length alone.
struct RowsPlan {
  int64_t rows = 0, cols = 0;
  int lanes = 1;
  int rows_per_block = kReductionThreads;
  SCALETRAIN_HOST_DEVICE int64_t blocks() const { return (rows + rows_per_block - 1) / rows_per_block; }
};
RowsPlan plan_rows(int64_t rows, int64_t cols);

// A maximum and the first column where it is (the smallest among equal maxima).
struct MaxArg {
  float value;
  int64_t index;
};
SCALETRAIN_HOST_DEVICE inline MaxArg later_max(MaxArg a, MaxArg b) {
  return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

// The host's row: all lanes of one row in loops, in the device's per-lane order and tree.
struct HostRow {
  static constexpr int kMaxLanes = 32;
  int64_t r;
  int lanes;
  bool leader() const { return true; }
  template <class F>
  float sum(int64_t n, const F& f) const {
    float a[kMaxLanes] = {};
    for (int64_t k = 0; k < n; ++k) a[k % lanes] += f(k);
    for (int s = lanes / 2; s > 0; s /= 2)
      for (int j = 0; j < s; ++j) a[j] += a[j + s];
    return a[0];
  }
  template <class F>
  MaxArg max_arg(int64_t n, const F& f) const {
    MaxArg a[kMaxLanes] = {};
    for (int j = 0; j < lanes; ++j) a[j] = {j < n ? f(j) : -INFINITY, j < n ? j : n};
    for (int64_t k = lanes; k < n; ++k) a[k % lanes] = later_max(a[k % lanes], MaxArg{f(k), k});
    for (int s = lanes / 2; s > 0; s /= 2)
      for (int j = 0; j < s; ++j) a[j] = later_max(a[j], a[j + s]);
    return a[0];
  }
  template <class F>
  void for_each(int64_t n, const F& f) const {
    for (int64_t k = 0; k < n; ++k) f(k);
  }
};

// The host's rows: i over rows, each a HostRow of the plan's lanes.
template <class F>
struct RowsOnHost {
  RowsPlan plan;
  F f;
  void operator()(int64_t r) const {
    HostRow row{r, plan.lanes};
    f(row);
  }
};

// Sources.

// The values of x [rows, ld] (T: float, bf16, f16) as floats: per-channel sums on NHWC, a bias gradient.
template <class T>
struct ColumnValues {
  static constexpr int kWidth = 1;
  const T* x;
  int64_t ld;
  SCALETRAIN_HOST_DEVICE void load(int64_t r, int64_t c, float* v) const { v[0] = to_float(x[r * ld + c]); }
};

}  // namespace scaletrain::kernels
