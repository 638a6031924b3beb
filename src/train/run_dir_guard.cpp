// run.dir protection (train/run_dir_guard.hpp).
#include "scaletrain/train/run_dir_guard.hpp"

#include <ctime>
#include <filesystem>
#include <vector>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/join.hpp"

namespace scaletrain::train {
namespace fs = std::filesystem;
namespace {

// What a run writes into run.dir (train/run_log.cpp, timeline.cpp, mlperf_log.cpp, checkpoint_store.cpp).
constexpr const char* kRunFiles[] = {"config.toml", "metrics.jsonl", "run.json", "timeline.json", "mllog.log",
                                     "checkpoints"};

// "<dir>.<YYYYmmdd-HHMMSS>", with "-2", "-3", ... where that exists already.
std::string aside_name(const std::string& dir) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  const std::string base = fs::path(dir).lexically_normal().string();
  const std::string trimmed = base.size() > 1 && base.back() == '/' ? base.substr(0, base.size() - 1) : base;
  std::string name = trimmed + "." + stamp;
  for (int i = 2; fs::exists(name); ++i) name = trimmed + "." + stamp + "-" + std::to_string(i);
  return name;
}

// The names in `dir` that a run writes (empty when the directory is missing or holds none).
std::vector<std::string> earlier_run_files(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const char* name : kRunFiles)
    if (fs::exists(fs::path(dir) / name, ec)) found.push_back(name);
  return found;
}

}  // namespace

std::string prepare_run_dir(const RunConfig& cfg) {
  if (cfg.run_dir.empty() || !cfg.resume.empty()) return "";
  const std::vector<std::string> found = earlier_run_files(cfg.run_dir);
  if (found.empty()) return "";
  ST_USER_CHECK(cfg.overwrite, "run.dir ", cfg.run_dir, " holds another run's files (", join(found),
                "): continue that run with --run.resume auto, or start afresh with --run.overwrite true (moves "
                "the directory aside to ", cfg.run_dir, ".<time>), or choose another --run.dir");
  const std::string aside = aside_name(cfg.run_dir);
  std::error_code ec;
  fs::rename(cfg.run_dir, aside, ec);
  ST_USER_CHECK(!ec, "run.overwrite: cannot move run.dir ", cfg.run_dir, " aside to ", aside, ": ", ec.message());
  return aside;
}

}  // namespace scaletrain::train
