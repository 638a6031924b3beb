// The per-step agreement of the host's flags. StepFlags holds what every rank must decide
// identically about a step: a stop signal received by any rank, rank 0's checkpoint-time trigger,
// the first step a rank has read back as inf/NaN under train.on_nonfinite = stop, the lowest rank
// whose input batch held inf/NaN. agree() combines every rank's flags in one small all-reduce (MAX
// over the int32 fields); HostAgreement does the same without waiting: started when a step
// starts, completed when it ends, where it has long finished. The step's own inf/NaN verdict is
// agreed on the device (train/device_step_state.hpp).
#pragma once
#include <cstdint>
#include <memory>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

// A rank is marked as world - rank, so that MAX gives the lowest rank marked (0: none).
struct StepFlags {
  int32_t stop_signal = 0;          // the signal number a rank received (0: none)
  int32_t stop_rank = 0;            // the lowest rank that received one (marked)
  int32_t checkpoint_by_time = 0;   // rank 0: run.checkpoint_seconds have passed since the last checkpoint
  int32_t nonfinite_step = 0;       // 1 + the first step read back as inf/NaN that stops the run (0: none)
  int32_t input_nonfinite = 0;      // the lowest rank whose batch held NaN/inf samples (marked; stream mode)

  static int32_t mark(int rank, int world) { return world - rank; }
  static int marked_rank(int32_t mark, int world) { return mark > 0 ? world - mark : -1; }
};

// Collective: the flags of every rank combined (MAX, field by field), the same on every rank.
StepFlags agree(comm::Communicator& comm, const StepFlags& local);

// agree() in two halves: start() with this rank's flags, finish() with every rank's combined. Every
// rank starts and finishes the same agreements in the same order; one at a time.
class HostAgreement {
 public:
  explicit HostAgreement(comm::Communicator& comm) : comm_(comm) {}
  void start(const StepFlags& local);
  StepFlags finish();
  bool started() const { return request_ != nullptr; }

 private:
  comm::Communicator& comm_;
  StepFlags flags_;
  std::unique_ptr<comm::Request> request_;
};

}  // namespace scaletrain::train
