// plan_column_sums: the tiles and row blocks of a column-sum reduction (kernels/reduction.hpp),
// plan_rows: the lanes per row of a per-row reduction, and plan_segment_sums: the blocks of the
// per-segment sums (kernels/segment_sums.hpp).
// Enough row blocks that every SM holds kReductionBlocksPerSm blocks with the column tiles, but no
// block shorter than kReductionMinRowsPerLane rows per lane; the plan depends only on the shape and
// the SM count.
#include <algorithm>

#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/kernels/segment_sums.hpp"

namespace scaletrain::kernels {
namespace {

int pow2_at_least(int64_t n) {
  int p = 1;
  while (p < n && p < 32) p *= 2;
  return p;
}

}  // namespace

ColumnSumsPlan plan_column_sums(int64_t rows, int64_t cols, int width, int sm_count) {
  ST_CHECK(rows >= 1 && cols >= 1, "column sums over [", rows, ", ", cols, "]: rows and columns must be positive");
  ST_CHECK(width >= 1 && sm_count >= 1, "column sums: width ", width, " and SM count ", sm_count,
           " must be positive");
  ColumnSumsPlan p;
  p.rows = rows;
  p.cols = cols;
  p.width = width;
  p.tile_x = pow2_at_least(cols);
  p.lanes = kReductionThreads / p.tile_x;
  p.col_tiles = (cols + p.tile_x - 1) / p.tile_x;
  const int64_t max_row_blocks = std::max<int64_t>(1, rows / (p.lanes * kReductionMinRowsPerLane));
  const int64_t wanted = (kReductionBlocksPerSm * sm_count + p.col_tiles - 1) / p.col_tiles;
  constexpr int64_t kMaxGridY = 65535;
  p.row_blocks = std::clamp<int64_t>(wanted, 1, std::min(max_row_blocks, kMaxGridY));
  p.rows_per_block = (rows + p.row_blocks - 1) / p.row_blocks;
  p.row_blocks = (rows + p.rows_per_block - 1) / p.rows_per_block;  // no empty block at the end
  return p;
}

RowsPlan plan_rows(int64_t rows, int64_t cols) {
  ST_CHECK(rows >= 0 && cols >= 1, "row reductions over [", rows, ", ", cols, "]: the rows need columns");
  RowsPlan p;
  p.rows = rows;
  p.cols = cols;
  p.lanes = pow2_at_least(cols);
  p.rows_per_block = kReductionThreads / p.lanes;
  return p;
}

SegmentSumsPlan plan_segment_sums(std::span<const int64_t> offsets, int width, int sm_count) {
  ST_CHECK(!offsets.empty() && offsets[0] >= 0, "segment sums: the offsets must start at an element (>= 0)");
  ST_CHECK(width >= 1 && sm_count >= 1, "segment sums: width ", width, " and SM count ", sm_count, " must be positive");
  for (size_t s = 1; s < offsets.size(); ++s)
    ST_CHECK(offsets[s] >= offsets[s - 1], "segment sums: segment ", s - 1, " ends at ", offsets[s],
             ", before its start ", offsets[s - 1]);
  SegmentSumsPlan p;
  p.segments = static_cast<int64_t>(offsets.size()) - 1;
  p.width = width;
  const int64_t total = offsets.back() - offsets.front();
  const int64_t wanted = kReductionBlocksPerSm * sm_count;
  const int64_t even = (total + wanted - 1) / wanted;
  p.chunk = std::max<int64_t>(kReductionThreads * kReductionMinRowsPerLane,
                              (even + kReductionThreads - 1) / kReductionThreads * kReductionThreads);
  for (int64_t s = 0; s < p.segments; ++s) p.blocks += (offsets[s + 1] - offsets[s] + p.chunk - 1) / p.chunk;
  return p;
}

std::vector<int64_t> segment_tables(const SegmentSumsPlan& plan, std::span<const int64_t> offsets) {
  ST_CHECK(static_cast<int64_t>(offsets.size()) == plan.segments + 1, "segment sums: a plan of ", plan.segments,
           " segments given ", offsets.size(), " offsets");
  const int64_t k = plan.segments + 1;
  std::vector<int64_t> table(offsets.begin(), offsets.end());
  table.resize(2 * k, 0);
  int64_t* first = table.data() + k;
  for (int64_t s = 0; s < plan.segments; ++s)
    first[s + 1] = first[s] + (offsets[s + 1] - offsets[s] + plan.chunk - 1) / plan.chunk;
  return table;
}

}  // namespace scaletrain::kernels
