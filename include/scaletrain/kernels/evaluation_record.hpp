// One evaluated sample's record, per row of logits [N, classes] on the per-row reductions: its
// label, the predicted class (the first maximum, as the loss's correctness takes it), the label's
// rank (how many classes score above it, ties going to the lower class as for the prediction: 0 is
// a top-1 hit, < 5 a top-5 hit) and its loss. Evaluation keeps them on the device until the split
// is done (train/split_evaluation.hpp).
#pragma once
#include <cstdint>

#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/reduction.hpp"

namespace scaletrain::kernels {

inline constexpr int kEvaluationRecordFields = 3;  // label, prediction, the label's rank

struct EvaluationRecord {
  const float* logits;
  const int32_t* labels;
  const float* row_losses;  // the loss's per-row losses of the same logits
  int32_t* records;         // [rows, kEvaluationRecordFields] from this batch's first row
  float* losses;            // [rows]
  int64_t classes;
  template <class Row>
  SCALETRAIN_HOST_DEVICE void operator()(const Row& row) const {
    const int64_t i = row.r;
    const float* z = logits + i * classes;
    const int32_t y = labels[i];
    const float zy = z[y];
    const MaxArg m = row.max_arg(classes, [&](int64_t k) { return z[k]; });
    // Counts below 2^24 are exact in f32.
    const float above = row.sum(classes, [&](int64_t k) { return z[k] > zy || (z[k] == zy && k < y) ? 1.0f : 0.0f; });
    if (row.leader()) {
      int32_t* r = records + i * kEvaluationRecordFields;
      r[0] = y;
      r[1] = static_cast<int32_t>(m.index);
      r[2] = static_cast<int32_t>(above);
      losses[i] = row_losses[i];
    }
  }
};

}  // namespace scaletrain::kernels
