// The MLPerf log's submission metadata and its warnings (train/mlperf_submission.hpp).
#include "scaletrain/train/mlperf_submission.hpp"

#include <algorithm>

#include "scaletrain/core/join.hpp"

namespace scaletrain::train {

const std::vector<std::string>& mlperf_hpc_benchmarks() {
  static const std::vector<std::string> names = {"deepcam", "cosmoflow", "oc20", "openfold"};
  return names;
}

void log_submission(MlperfLog& mllog, const RunConfig& cfg, const PlatformDescription& platform, double time_s) {
  const std::pair<const char*, std::string> keys[] = {
      {"submission_org", cfg.submission_org},
      {"submission_platform", cfg.submission_platform.empty() ? platform.text : cfg.submission_platform},
      {"submission_division", cfg.submission_division},
      {"submission_status", cfg.submission_status},
      {"submission_benchmark", cfg.submission_benchmark}};
  for (const auto& [key, value] : keys)
    if (!value.empty()) mllog.point(key, value, time_s);
  mllog.point("accelerators_per_node", platform.accelerators_per_node, time_s);
}

std::vector<std::string> submission_warnings(const RunConfig& cfg) {
  std::vector<std::string> unset;
  if (cfg.submission_org.empty()) unset.push_back("org");
  if (cfg.submission_division.empty()) unset.push_back("division");
  if (cfg.submission_status.empty()) unset.push_back("status");
  if (cfg.submission_benchmark.empty()) unset.push_back("benchmark");
  std::vector<std::string> out;
  if (!unset.empty())
    out.push_back(
        "run.mllog: MLCommons' HPC rules require submission metadata this run leaves unset: set "
        "run.mllog_submission." +
        join(unset, ", run.mllog_submission."));
  const auto& known = mlperf_hpc_benchmarks();
  if (!cfg.submission_benchmark.empty() &&
      std::find(known.begin(), known.end(), cfg.submission_benchmark) == known.end())
    out.push_back("run.mllog_submission.benchmark = '" + cfg.submission_benchmark +
                  "': MLCommons' HPC 3.0 rules know only " + join(known) + ", so their checker rejects this log");
  return out;
}

}  // namespace scaletrain::train
