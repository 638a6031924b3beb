// The MLPerf log's submission metadata (run.mllog_submission): submission_org, _platform, _division,
// _status and _benchmark, each once, and accelerators_per_node; and the warnings a run with
// run.mllog gets where MLCommons' HPC 3.0 rules would reject its log for them.
#pragma once
#include <string>
#include <vector>

#include "scaletrain/train/config.hpp"
#include "scaletrain/train/mlperf_log.hpp"
#include "scaletrain/train/platform_description.hpp"

namespace scaletrain::train {

// The benchmarks MLCommons' HPC 3.0 rules know (submission_benchmark's allowed values).
const std::vector<std::string>& mlperf_hpc_benchmarks();

// Logs the keys that are set; the platform always (`platform.text` where the key is empty).
void log_submission(MlperfLog& mllog, const RunConfig& cfg, const PlatformDescription& platform, double time_s);

// Empty where the log would pass: the required keys left unset, a benchmark the rules do not know.
std::vector<std::string> submission_warnings(const RunConfig& cfg);

}  // namespace scaletrain::train
