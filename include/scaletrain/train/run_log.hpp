// RunLog: the timing logs of a run directory, written by rank 0 only. config.toml gets the whole
// configuration at the start; metrics.jsonl gets one JSON line per logging interval (phase times
// reduced over ranks; each rank's GPU telemetry where NVML reads it); run.json, at the end,
// describes the whole run (configuration, world, versions, throughput, phase shares). Format:
// jobs/README.md.
#pragma once
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scaletrain/train/cache_clear.hpp"
#include "scaletrain/train/checkpointer.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/platform_description.hpp"
#include "scaletrain/train/trainer.hpp"

namespace scaletrain::train {

// Format version of the run directory, written as `version` in run.json and in every metrics.jsonl
// line. New fields are added without changing it; a field removed or renamed, or a meaning changed,
// bumps it (jobs/README.md, "Run directory format"; perf/scaling_report.py reads versions 1 to 4).
// Version 3: metrics.jsonl may hold record lines (a `record` key: "checkpoint", "resumed_from",
// "evaluation") between the interval lines, which are unchanged; a resumed run appends to the
// earlier run's file. Version 4: every `epoch` (and run.json's target_epoch) counts from 1, as the
// progress lines and the MLPerf log's epoch_num do.
inline constexpr int kRunDirFormatVersion = 4;

struct RunInfo {
  int world_size = 1;
  int64_t per_rank_batch = 0;
  int64_t steps_per_epoch = 0;
  std::vector<std::string> hosts;    // per rank
  std::string device;                // backend description of rank 0
  std::vector<std::string> operator_choices;  // rank 0's (Backend::operator_choices)
  std::optional<Bf16GemmChoice> bf16_gemm;     // run.cpu_bf16_gemm where the backend had the choice
  std::optional<AlgorithmChoice> algorithms;   // run.cudnn_algorithms where the backend had the choice
  int64_t parameters = 0;
  int64_t flops_per_sample = 0;      // forward
  int64_t training_flops_per_sample = 0;  // forward and backward (Model::training_flops_per_sample)
  PrecisionReport precision;
  TransportReport transport;
  BucketReport buckets;  // comm.bucket_mb: the size in use; auto: probe, fit, candidates
  std::optional<ResumeRecord> resumed;  // the checkpoint this run continued from
  std::vector<StagingSummary> staging;  // stage mode: the training split, then the evaluation split
  std::optional<CacheClearReport> cache_clear;  // run.clear_cache
  PlatformDescription platform;                 // the nodes' GPUs or CPUs
  std::vector<std::string> cpu_masks;         // per rank, as taskset -c writes them
  std::vector<std::string> binding_warnings;  // train/binding_check.hpp
  // Seconds from run_start to the end of the first evaluation at or above train.target_accuracy.
  std::optional<double> time_to_accuracy_s;
};

class RunLog {
 public:
  // Creates the directory (rank 0 only; other ranks pass enabled = false). A resumed run appends to
  // metrics.jsonl, starting with a "resumed_from" record.
  RunLog(bool enabled, const std::string& run_dir, const RunConfig& cfg,
         const std::optional<ResumeRecord>& resumed = std::nullopt);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  bool enabled() const { return file_ != nullptr; }
  void interval(const IntervalTimings& t);
  void checkpoint(const CheckpointRecord& c);
  // A "stopped" record: a stop signal ended the run (run.json is left for the run that finishes).
  void stopped(const TrainResult& r);
  // An "evaluation" record: the epoch's evaluation, `run_seconds` after run_start.
  void evaluation(const EpochReport& e, double run_seconds);
  void finish(const RunInfo& info, const TrainResult& result);
  // Seconds spent writing metrics lines (so the cost of logging can be checked).
  double write_seconds() const { return write_seconds_; }

 private:
  void write_line(const nlohmann::json& j);
  std::string dir_;
  RunConfig cfg_;
  std::FILE* file_ = nullptr;
  double write_seconds_ = 0;
  std::vector<double> phase_totals_;  // non-warm-up seconds per phase, mean over ranks
};

// Versions of what this binary was built with: git commit, MPI, oneDNN, HDF5, Kokkos, compiler.
std::vector<std::pair<std::string, std::string>> build_versions();

}  // namespace scaletrain::train
