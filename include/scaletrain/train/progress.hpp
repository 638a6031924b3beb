// ProgressPrinter: rank 0's output during training: one plain line per interval in batch logs
// (a progress bar instead when stdout is a terminal), a line per epoch, and the final summary.
#pragma once
#include <cstdint>

#include "scaletrain/train/config.hpp"

namespace scaletrain::train {

struct EpochReport;
struct TrainResult;

class ProgressPrinter {
 public:
  ProgressPrinter(bool enabled, const RunConfig& cfg, int64_t steps_per_epoch, int64_t planned_steps);
  void interval(int64_t epoch, int64_t step_in_epoch, int64_t step, double loss, double accuracy, double lr,
                double samples_per_second, double ms_per_step, double elapsed_seconds);
  void epoch_end(const EpochReport& r);
  void finish(const TrainResult& r);

 private:
  bool enabled_;
  bool tty_;
  int64_t epochs_, steps_per_epoch_, planned_;
  bool evaluate_;
  int64_t warmup_steps_;
};

}  // namespace scaletrain::train
