// transpose_matrix: dst[cols, rows] = src[rows, cols]^T, f32, in 16x16 tiles so that both sides stay
// in cache lines already loaded. The GEMM-shaped ops use it to hand oneDNN's sgemm its faster
// untransposed operand order (gemm_inner_product.cpp, separable_conv_fused.cpp).
#pragma once
#include <algorithm>
#include <cstdint>

namespace scaletrain::cpu {

inline void transpose_matrix(const float* src, int64_t rows, int64_t cols, float* dst) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r_end = std::min(rows, r0 + kTile), c_end = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c_end; ++c)
        for (int64_t r = r0; r < r_end; ++r) dst[c * rows + r] = src[r * cols + c];
    }
}

}  // namespace scaletrain::cpu
