// plan_column_sums: the tiles and row blocks of a column-sum reduction (kernels/reduction.hpp), and
// plan_rows: the lanes per row of a per-row reduction.
// Enough row blocks that every SM holds kReductionBlocksPerSm blocks with the column tiles, but no
// block shorter than kReductionMinRowsPerLane rows per lane; the plan depends only on the shape and
// the SM count.
#include <algorithm>

#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/reduction.hpp"

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

}  // namespace scaletrain::kernels
