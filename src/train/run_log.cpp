// metrics.jsonl and run.json of a run directory.
#include "scaletrain/train/device_step_counts.hpp"
#include "scaletrain/train/json_file.hpp"
#include "scaletrain/train/run_log.hpp"

#include <hdf5.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/stop_signals.hpp"

#include "scaletrain_git_commit.hpp"
#ifndef SCALETRAIN_GIT_COMMIT
#define SCALETRAIN_GIT_COMMIT "unknown"
#endif

namespace scaletrain::train {
namespace {

// The keys as nested objects: run.mllog_submission.org is j["run"]["mllog_submission"]["org"].
nlohmann::json config_json(const RunConfig& cfg) {
  nlohmann::json j;
  for (const auto& k : config_keys()) {
    if (is_left_out(k, cfg)) continue;
    std::string pointer = "/" + k.key;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    nlohmann::json& slot = j[nlohmann::json::json_pointer(pointer)];
    const std::string v = k.get(cfg);
    const bool auto_number = k.type == "auto|float" || k.type == "auto|int";
    if (k.type == "string" || (auto_number && v.front() == '"')) slot = v.substr(1, v.size() - 2);
    else if (k.type == "bool") slot = v == "true";
    else if (k.type == "int" || k.type == "auto|int") slot = std::stoll(v);
    else if (k.type == "list") slot = config_list_items(v);
    else slot = std::stod(v);
  }
  return j;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> build_versions() {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  std::string mpi_s(mpi, static_cast<size_t>(len));
  if (auto nl = mpi_s.find_first_of("\n,"); nl != std::string::npos) mpi_s.resize(nl);
  const dnnl_version_t* v = dnnl_version();
  unsigned h5maj = 0, h5min = 0, h5rel = 0;
  H5get_libversion(&h5maj, &h5min, &h5rel);
  return {
      {"scaletrain", "0.1.0"},
      {"git_commit", SCALETRAIN_GIT_COMMIT},
      {"mpi", mpi_s},
      {"onednn", std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch)},
      {"hdf5", std::to_string(h5maj) + "." + std::to_string(h5min) + "." + std::to_string(h5rel)},
      {"kokkos", std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
                     std::to_string(KOKKOS_VERSION % 100)},
      {"compiler", __VERSION__},
  };
}

namespace {
// One rank's GPU sample; a value NVML did not give is left out.
nlohmann::json gpu_json(int rank, const GpuSample& g) {
  nlohmann::json j{{"rank", rank}};
  auto put = [&j](const char* key, double v) {
    if (!std::isnan(v)) j[key] = v;
  };
  put("sm_clock_mhz", g.sm_clock_mhz);
  put("sm_clock_max_mhz", g.sm_clock_max_mhz);
  put("temperature_c", g.temperature_c);
  put("power_w", g.power_w);
  put("memory_used_mib", g.memory_used_mib);
  if (g.clock_event_reasons >= 0) {
    j["clock_event_reasons"] = g.clock_event_reasons;
    j["clock_event_reason_names"] = clock_event_reason_names(static_cast<uint64_t>(g.clock_event_reasons));
  }
  return j;
}
// The run's whole configuration, as --print-config prints it (the start-up shows only what differs
// from the defaults).
void write_config_file(const std::string& path, const RunConfig& cfg) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  ST_USER_CHECK(f != nullptr, "cannot write ", path, ": ", std::strerror(errno));
  const std::string text = config_to_toml(cfg);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ST_USER_CHECK(std::fclose(f) == 0 && ok, "cannot write ", path, ": ", std::strerror(errno));
}

nlohmann::json position_json(const TrainingPosition& p) {
  return {{"step", p.step}, {"epoch", p.epoch + 1}, {"step_in_epoch", p.step_in_epoch}};
}
nlohmann::json resume_json(const ResumeRecord& r) {
  return {{"version", kRunDirFormatVersion}, {"record", "resumed_from"}, {"path", r.path},
          {"saved", position_json(r.saved)}, {"start", position_json(r.start)},
          {"saved_world_size", r.saved_world_size}, {"note", r.note}};
}
}  // namespace

RunLog::RunLog(bool enabled, const std::string& run_dir, const RunConfig& cfg,
               const std::optional<ResumeRecord>& resumed)
    : dir_(run_dir), cfg_(cfg), phase_totals_(kPhaseCount, 0.0) {
  if (!enabled || run_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  ST_USER_CHECK(!ec, "cannot create run directory ", run_dir, ": ", ec.message());
  write_config_file(run_dir + "/config.toml", cfg);
  const std::string path = run_dir + "/metrics.jsonl";
  file_ = std::fopen(path.c_str(), resumed ? "a" : "w");
  ST_CHECK(file_ != nullptr, "cannot write ", path, ": ", std::strerror(errno));
  if (resumed) write_line(resume_json(*resumed));
}

void RunLog::write_line(const nlohmann::json& j) {
  const std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

void RunLog::checkpoint(const CheckpointRecord& c) {
  if (!file_ || c.path.empty()) return;
  write_line({{"version", kRunDirFormatVersion}, {"record", "checkpoint"}, {"step", c.step}, {"path", c.path},
              {"bytes", c.bytes}, {"seconds", c.seconds}});
}

void RunLog::stopped(const TrainResult& r) {
  if (!file_) return;
  write_line({{"version", kRunDirFormatVersion}, {"record", "stopped"}, {"signal", signal_name(r.stop_signal)},
              {"rank", r.stop_rank}, {"step", r.final_step}, {"checkpoint", r.stop_checkpoint}});
}

void RunLog::evaluation(const EpochReport& e, double run_seconds) {
  if (!file_) return;
  write_line({{"version", kRunDirFormatVersion}, {"record", "evaluation"}, {"epoch", e.epoch + 1},
              {"eval_accuracy", e.eval_accuracy}, {"eval_loss", e.eval_loss}, {"eval_samples", e.eval_samples},
              {"run_seconds", run_seconds}, {"reached_target", e.reached_target}});
}

RunLog::~RunLog() {
  if (file_) std::fclose(file_);
}

void RunLog::interval(const IntervalTimings& t) {
  if (!file_) return;
  const double start = now_seconds();
  if (!t.warmup)
    for (int p = 0; p < kPhaseCount; ++p) phase_totals_[static_cast<size_t>(p)] += t.mean[p];
  nlohmann::json j;
  j["version"] = kRunDirFormatVersion;
  j["epoch"] = t.epoch + 1;
  j["first_step"] = t.first_step;
  j["steps"] = t.steps;
  j["warmup"] = t.warmup;
  j["elapsed_s"] = t.elapsed_seconds;
  j["interval_s"] = t.wall_seconds;
  j["samples_per_s"] = t.samples_per_second;
  j["loss"] = t.loss;
  j["accuracy"] = t.accuracy;
  j["lr"] = t.lr;
  j["loss_scale"] = t.loss_scale;
  j["skipped_steps"] = t.skipped_steps;
  nlohmann::json phases;
  const double steps = static_cast<double>(std::max<int64_t>(t.steps, 1));
  for (int p = 0; p < kPhaseCount; ++p) {
    phases[std::string(phase_name(static_cast<Phase>(p)))] = {{"mean_ms", 1e3 * t.mean[p] / steps},
                                                               {"min_ms", 1e3 * t.min[p] / steps},
                                                               {"max_ms", 1e3 * t.max[p] / steps},
                                                               {"slowest_rank", t.slowest_rank[p]}};
  }
  j["phases"] = phases;
  j["allreduce_total_ms"] = 1e3 * t.allreduce_total_mean / steps;
  if (!t.gpus.empty()) {  // GPU telemetry (NVML): absent, not zero, without it
    nlohmann::json gpus = nlohmann::json::array();
    for (size_t r = 0; r < t.gpus.size(); ++r) gpus.push_back(gpu_json(static_cast<int>(r), t.gpus[r]));
    j["gpus"] = gpus;
  }
  write_line(j);
  write_seconds_ += now_seconds() - start;
}

void RunLog::finish(const RunInfo& info, const TrainResult& r) {
  if (!file_) return;
  nlohmann::json j;
  if (info.resumed) j["resumed_from"] = resume_json(*info.resumed);
  j["format"] = "scaletrain-run";
  j["version"] = kRunDirFormatVersion;
  j["config"] = config_json(cfg_);
  j["world_size"] = info.world_size;
  j["global_batch"] = cfg_.batch;
  j["per_rank_batch"] = info.per_rank_batch;
  j["steps_per_epoch"] = info.steps_per_epoch;
  j["hosts"] = info.hosts;
  j["device"] = info.device;
  j["platform"] = {{"description", info.platform.text},
                   {"nodes", info.platform.nodes},
                   {"accelerators_per_node", info.platform.accelerators_per_node}};
  j["cache_clear"] = info.cache_clear ? cache_clear_json(*info.cache_clear) : nlohmann::json(nullptr);
  j["parameters"] = info.parameters;
  j["forward_flops_per_sample"] = info.flops_per_sample;
  j["training_flops_per_sample"] = info.training_flops_per_sample;
  const PrecisionReport& p = info.precision;
  j["precision"] = {{"train", p.train},       {"compute", p.compute},
                    {"native", p.native},     {"emulated", !p.native},
                    {"comm", p.comm},         {"loss_scaling", p.loss_scaling},
                    {"loss_scale_init", p.loss_scale_init}, {"final_loss_scale", r.final_loss_scale},
                    {"skipped_steps", r.skipped_steps}};
  j["transport"] = {{"backend", info.transport.backend}, {"buckets", info.transport.buckets},
                    {"description", info.transport.description}};
  j["buckets"] = bucket_report_json(info.buckets);
  j["staging"] = nlohmann::json::array();
  for (const StagingSummary& st : info.staging) j["staging"].push_back(staging_json(st));
  j["operators"] = {{"deterministic", cfg_.deterministic},
                    {"allow_tf32", cfg_.allow_tf32},
                    {"cudnn_workspace_mb", cfg_.cudnn_workspace_mb == RunConfig::kAutoWorkspace
                                               ? nlohmann::json("auto")
                                               : nlohmann::json(cfg_.cudnn_workspace_mb)},
                    {"choices", info.operator_choices},
                    {"cpu_bf16_gemm", info.bf16_gemm ? bf16_gemm_json(*info.bf16_gemm) : nlohmann::json(nullptr)},
                    {"algorithms", info.algorithms ? algorithm_choice_json(*info.algorithms) : nlohmann::json(nullptr)}};
  for (const auto& [k, v] : build_versions()) j["versions"][k] = v;
  j["steps"] = r.steps;
  j["final_step"] = r.final_step;
  j["seconds"] = r.seconds;
  j["samples_per_s"] = r.mean_samples_per_second;
  j["device_per_step"] = device_per_step_json(r.device_per_step);
  j["final_eval_accuracy"] = r.final_eval_accuracy;
  j["final_eval_loss"] = r.final_eval_loss;
  j["target_accuracy"] = cfg_.target_accuracy > 0 ? nlohmann::json(cfg_.target_accuracy) : nlohmann::json(nullptr);
  j["time_to_accuracy_s"] = info.time_to_accuracy_s ? nlohmann::json(*info.time_to_accuracy_s) : nlohmann::json(nullptr);
  j["target_epoch"] = r.target_epoch >= 0 ? nlohmann::json(r.target_epoch + 1) : nlohmann::json(nullptr);
  j["binding"] = {{"cpu_masks", info.cpu_masks}, {"warnings", info.binding_warnings}};
  double step_total = phase_totals_[static_cast<size_t>(Phase::step)];
  nlohmann::json share;
  for (int p = 0; p < kPhaseCount; ++p)
    if (static_cast<Phase>(p) != Phase::step)
      share[std::string(phase_name(static_cast<Phase>(p)))] = step_total > 0 ? phase_totals_[static_cast<size_t>(p)] / step_total : 0.0;
  j["phase_share"] = share;
  j["allreduce_total_share"] = r.allreduce_total_share;
  j["metrics_write_seconds"] = write_seconds_;
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : r.epochs)
    epochs.push_back({{"epoch", e.epoch + 1},
                      {"steps", e.steps},
                      {"seconds", e.seconds},
                      {"samples_per_s", e.samples_per_second},
                      {"train_loss", e.train_loss},
                      {"train_accuracy", e.train_accuracy},
                      {"eval_loss", e.eval_loss},
                      {"eval_accuracy", e.eval_accuracy}});
  j["epochs"] = epochs;
  write_json_file(dir_ + "/run.json", j, 2);
}

}  // namespace scaletrain::train
