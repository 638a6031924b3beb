// Trainer: synchronous data-parallel training of one model replica per rank on a backend (run.device).
// Each step: next batch from the prefetching loader (already on its way to the device), normalize
// (and augment) on the device, forward, loss, backward with gradient buckets all-reduced as
// backward fills them, wait, optimizer. Rank 0 prints progress; every rank's numbers reach it by
// reduction.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scaletrain/train/device_step_counts.hpp"
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/nn/model.hpp"
#include "scaletrain/train/algorithm_choice.hpp"
#include "scaletrain/train/bf16_gemm_choice.hpp"
#include "scaletrain/train/bucket_tuner.hpp"
#include "scaletrain/train/checkpointer.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/gpu_telemetry.hpp"
#include "scaletrain/train/split_evaluation.hpp"
#include "scaletrain/train/staging_summary.hpp"

namespace scaletrain::train {

struct EpochReport {
  int64_t epoch = 0;
  int64_t steps = 0;
  double train_loss = 0, train_accuracy = 0;
  double eval_loss = 0, eval_accuracy = 0;
  int64_t eval_samples = 0;
  double seconds = 0;
  double samples_per_second = 0;
  bool reached_target = false;  // eval_accuracy >= train.target_accuracy (set when a target is)
};

// Rank 0's hooks at an epoch's milestones (the MLPerf log and the time to accuracy follow them).
struct EpochHooks {
  std::function<void(int64_t epoch)> started;        // before the epoch's first step
  std::function<void(int64_t epoch)> trained;        // after its last step, before evaluation
  std::function<void(const EpochReport&)> finished;  // after evaluation (eval_* set with train.evaluate)
};

// A span of steady-clock time (now_seconds()).
struct TimeSpan {
  double start = 0, end = 0;
};

// Phase times of one logging interval, reduced over ranks.
struct IntervalTimings {
  int64_t epoch = 0;
  int64_t first_step = 0, steps = 0;
  bool warmup = false;         // inside the first train.warmup_log_steps steps: excluded from averages
  double wall_seconds = 0;     // of the interval, on rank 0
  double elapsed_seconds = 0;  // since the start of training
  double samples_per_second = 0;
  double loss = 0, accuracy = 0, lr = 0;
  // Seconds per phase summed over the interval's steps: mean over ranks, min, max and the slowest rank.
  double mean[kPhaseCount] = {}, min[kPhaseCount] = {}, max[kPhaseCount] = {};
  int slowest_rank[kPhaseCount] = {};
  double allreduce_total_mean = 0;  // all-reduce time including the part hidden behind backward
  double loss_scale = 1;            // at the end of the interval (fp16; 1 otherwise)
  int64_t skipped_steps = 0;        // steps skipped for inf/NaN since the start (identical on every rank)
  // Each rank's GPU telemetry sampled at the end of the interval, indexed by rank; empty when no
  // rank has telemetry (no NVML, or no GPU).
  std::vector<GpuSample> gpus;
};

// The precision a run computes and communicates in, as the start-up table and run.json show it.
struct PrecisionReport {
  std::string train = "fp32";  // train.precision
  std::string compute;         // the backend's note: native kernels, or emulated
  bool native = true;
  std::string comm = "fp32";   // comm.dtype
  bool loss_scaling = false;   // fp16: dynamic loss scaler
  double loss_scale_init = 1;
};

// What carries the gradients (comm.backend), as the start-up output and run.json show it.
struct TransportReport {
  std::string backend;      // comm.backend resolved for the device: "nccl" or "mpi"
  std::string buckets;      // comm::bucket_transport_name: "host", "host-staged" or "stream-ordered"
  std::string description;  // one line for people
};

struct TrainResult {
  std::vector<EpochReport> epochs;
  int64_t steps = 0;       // taken by this run (a resumed run counts from its checkpoint)
  int64_t final_step = 0;  // the global step count at the end
  double seconds = 0;
  double mean_samples_per_second = 0;  // warm-up excluded
  double final_eval_accuracy = 0, final_eval_loss = 0;
  double exposed_allreduce_share = 0;  // of step time
  double allreduce_total_share = 0;
  int64_t target_epoch = -1;    // the first epoch whose evaluation reached train.target_accuracy
  double final_loss_scale = 1;  // fp16's dynamic loss scale at the end (1 without loss scaling)
  int64_t skipped_steps = 0;    // steps skipped for inf/NaN (fp16: the loss scaler; else train.on_nonfinite = skip)
  // A stop signal (SIGUSR1, SIGTERM) ended the run after final_step: the signal, the lowest rank
  // that received it, and the checkpoint written ("" without run.dir).
  int stop_signal = 0;
  int stop_rank = -1;
  std::string stop_checkpoint;
  // The device counters per measured step (train/device_step_counts.hpp), for run.json.
  DevicePerStep device_per_step;
};

class Trainer {
 public:
  Trainer(RunConfig cfg, comm::Communicator& comm);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Starts at step 0, or where run.resume's checkpoint left off, and runs all epochs (or up to
  // train.max_steps steps in total, or until an evaluation reaches train.target_accuracy with
  // train.stop_at_target, or until a rank receives SIGUSR1 or SIGTERM: every rank then stops after
  // the same step and checkpoints), checkpointing as configured; returns what happened. inf/NaN
  // with train.on_nonfinite = stop throws ConsistentError on every rank.
  TrainResult run();

  // run.evaluate_only: loads a model.h5's (or checkpoint's) parameters and buffers, which must fit
  // the model exactly, and evaluates them on train.eval_split across the ranks, sample by sample.
  // Collective; the metrics on rank 0 (empty elsewhere).
  EvaluationMetrics evaluate_file(const std::string& path);
  // The class names of the data set (its `classes` attribute).
  const std::vector<std::string>& class_names() const;

  nn::Model& model();
  Backend& backend();
  // "cpu (oneDNN ..., N threads, ...)", and in bf16/fp16 how the backend computes in that type
  std::string device_description() const;
  PrecisionReport precision() const;
  TransportReport transport() const;
  int64_t per_rank_batch() const;
  int64_t steps_per_epoch() const;
  // Samples in the training split, and in the evaluation split (0 with train.evaluate = false).
  int64_t train_samples() const;
  int64_t eval_samples() const;
  // Called on rank 0 after each logging interval (the timing log of the scaling issue hooks here).
  void on_interval(std::function<void(const IntervalTimings&)> f);
  // Called on rank 0 at each epoch's start, end of training and end (after evaluation).
  void on_epoch(EpochHooks hooks);
  // When the constructor opened and staged the data sets (train.data: the loaders' construction).
  TimeSpan staging_time() const;
  // Stage mode: every rank's staging of the training split, then of the evaluation split.
  const std::vector<StagingSummary>& staging() const;
  // Rank 0's one start-up line about GPU telemetry: on which ranks NVML reads the GPU, or why not;
  // "" on other ranks and where no rank has a GPU (cpu, sim).
  const std::string& gpu_telemetry_line() const;
  // Called on rank 0 after each checkpoint.
  void on_checkpoint(std::function<void(const CheckpointRecord&)> f);
  // The checkpoint this run continued from (run.resume), if any.
  const std::optional<ResumeRecord>& resumed_from() const;
  // comm.bucket_mb: the size in use, and for auto the probe, fit and prediction behind it.
  const BucketReport& bucket_report() const;
  // run.cpu_bf16_gemm as resolved for a bf16 model where the backend has the choice; empty elsewhere.
  const std::optional<Bf16GemmChoice>& bf16_gemm_choice() const;
  // run.cudnn_algorithms as resolved where the backend's operators choose algorithms; empty elsewhere.
  const std::optional<AlgorithmChoice>& algorithm_choice() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Rank 0's table of ranks, hosts and devices (nccl-tests style), gathered from every rank.
std::string rank_table(comm::Communicator& comm, const std::string& device_description);

}  // namespace scaletrain::train
