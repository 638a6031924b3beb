// MlperfLog: the `:::MLLOG` lines, on stdout and in run.dir/mllog.log.
#include "scaletrain/train/mlperf_log.hpp"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::train {

MlperfLog::MlperfLog(bool enabled, const std::string& run_dir) : enabled_(enabled) {
  if (!enabled_) return;
  const double unix_ms = std::chrono::duration<double, std::milli>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  unix_ms_minus_steady_ms_ = unix_ms - 1e3 * now_seconds();
  if (run_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  ST_CHECK(!ec, "cannot create run directory ", run_dir, ": ", ec.message());
  const std::string path = run_dir + "/mllog.log";
  file_ = std::fopen(path.c_str(), "a");  // a resumed run appends, as metrics.jsonl does
  ST_CHECK(file_ != nullptr, "cannot write ", path, ": ", std::strerror(errno));
}

MlperfLog::~MlperfLog() {
  if (file_) std::fclose(file_);
}

void MlperfLog::start(const std::string& key, double time_s, nlohmann::json metadata, std::source_location where) {
  write("INTERVAL_START", key + "_start", nullptr, time_s, std::move(metadata), where);
}

void MlperfLog::stop(const std::string& key, double time_s, nlohmann::json metadata, std::source_location where) {
  write("INTERVAL_END", key + "_stop", nullptr, time_s, std::move(metadata), where);
}

void MlperfLog::point(const std::string& key, nlohmann::json value, double time_s, nlohmann::json metadata,
                      std::source_location where) {
  write("POINT_IN_TIME", key, std::move(value), time_s, std::move(metadata), where);
}

void MlperfLog::write(const char* event_type, const std::string& key, nlohmann::json value, double time_s,
                      nlohmann::json metadata, const std::source_location& where) {
  if (!enabled_) return;
  metadata["file"] = std::filesystem::path(where.file_name()).filename().string();
  metadata["lineno"] = where.line();
  // The key order of the mlperf_logging package (nlohmann::ordered_json keeps insertion order).
  nlohmann::ordered_json j;
  j["namespace"] = "";
  j["time_ms"] = std::llround(unix_ms_minus_steady_ms_ + 1e3 * time_s);
  j["event_type"] = event_type;
  j["key"] = key;
  j["value"] = std::move(value);
  j["metadata"] = std::move(metadata);
  const std::string line = ":::MLLOG " + j.dump() + "\n";
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  if (file_) {
    std::fputs(line.c_str(), file_);
    std::fflush(file_);
  }
}

}  // namespace scaletrain::train
