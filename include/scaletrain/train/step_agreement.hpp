// The per-step agreement. StepFlags holds what every rank must decide identically at the end of a
// step: a stop signal received by any rank, rank 0's checkpoint-time trigger, inf/NaN in the reduced
// gradients (fp16: the loss scaler's overflow), the lowest ranks whose loss or input batch held
// inf/NaN. agree()
// combines every rank's flags in one small all-reduce (MAX over the int32 fields), not one each.
#pragma once
#include <cstdint>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

// A rank is marked as world - rank, so that MAX gives the lowest rank marked (0: none).
struct StepFlags {
  int32_t stop_signal = 0;          // the signal number a rank received (0: none)
  int32_t stop_rank = 0;            // the lowest rank that received one (marked)
  int32_t checkpoint_by_time = 0;   // rank 0: run.checkpoint_seconds have passed since the last checkpoint
  int32_t gradients_nonfinite = 0;  // inf/NaN in the (reduced, unscaled) gradients
  int32_t loss_nonfinite = 0;       // the lowest rank whose loss was inf/NaN (marked)
  int32_t input_nonfinite = 0;      // the lowest rank whose batch held NaN/inf samples (marked; stream mode)

  static int32_t mark(int rank, int world) { return world - rank; }
  static int marked_rank(int32_t mark, int world) { return mark > 0 ? world - mark : -1; }
  bool nonfinite() const { return gradients_nonfinite != 0 || loss_nonfinite != 0; }
};

// Collective: the flags of every rank combined (MAX, field by field), the same on every rank.
StepFlags agree(comm::Communicator& comm, const StepFlags& local);

}  // namespace scaletrain::train
