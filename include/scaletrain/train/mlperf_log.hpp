// MlperfLog: MLPerf-HPC-style result lines from rank 0 (run.mllog), as the mlperf_logging package
// writes them: `:::MLLOG {"namespace": "", "time_ms": ..., "event_type": ..., "key": ..., "value": ...,
// "metadata": {"file": ..., "lineno": ...}}`, one per event, on stdout and in run.dir/mllog.log.
// event_type is INTERVAL_START (init_start, run_start, staging_start, epoch_start, eval_start),
// INTERVAL_END (their _stop) or POINT_IN_TIME (eval_accuracy, global_batch_size, number_of_ranks, ...).
// Times are steady-clock seconds (now_seconds()), written as Unix milliseconds.
#pragma once
#include <cstdio>
#include <source_location>
#include <string>

#include <nlohmann/json.hpp>

namespace scaletrain::train {

class MlperfLog {
 public:
  // Disabled (writes nothing) unless `enabled`; the file only when run_dir is set.
  MlperfLog(bool enabled, const std::string& run_dir);
  ~MlperfLog();
  MlperfLog(const MlperfLog&) = delete;
  MlperfLog& operator=(const MlperfLog&) = delete;

  bool enabled() const { return enabled_; }
  // `key` is the interval's name without _start/_stop ("run", "epoch", ...).
  void start(const std::string& key, double time_s, nlohmann::json metadata = nlohmann::json::object(),
             std::source_location where = std::source_location::current());
  void stop(const std::string& key, double time_s, nlohmann::json metadata = nlohmann::json::object(),
            std::source_location where = std::source_location::current());
  void point(const std::string& key, nlohmann::json value, double time_s,
             nlohmann::json metadata = nlohmann::json::object(),
             std::source_location where = std::source_location::current());

 private:
  void write(const char* event_type, const std::string& key, nlohmann::json value, double time_s,
             nlohmann::json metadata, const std::source_location& where);
  bool enabled_ = false;
  std::FILE* file_ = nullptr;
  double unix_ms_minus_steady_ms_ = 0;  // adds to steady-clock milliseconds to give Unix time
};

}  // namespace scaletrain::train
