// CheckpointStore: temporary directory, fsync, rename, `latest`, pruning (train/checkpoint_store.hpp).
#include "scaletrain/train/checkpoint_store.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {
namespace fs = std::filesystem;
namespace {

// step-<N> -> N, or -1 for any other name.
int64_t step_of(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5) return -1;
  const std::string digits = name.substr(5);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoll(digits);
}

void remove_tree(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
  ST_CHECK(!ec, "removing ", p.string(), ": ", ec.message());
}

// The checkpoint `<root>/latest` names, or "" without one.
std::string latest_checkpoint_in(const std::string& root) {
  std::ifstream in(root + "/latest");
  if (!in) return "";
  std::string name;
  std::getline(in, name);
  ST_CHECK(step_of(name) >= 0, root, "/latest names '", name, "', not a step-<N> checkpoint");
  const std::string dir = root + "/" + name;
  ST_CHECK(fs::is_directory(dir), root, "/latest names ", name, ", which does not exist");
  return dir;
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) { return "step-" + std::to_string(step); }

CheckpointStore::CheckpointStore(std::string run_dir, int64_t keep)
    : root_(std::move(run_dir) + "/checkpoints"), keep_(keep) {
  ST_CHECK(keep_ >= 1, "run.checkpoint_keep = ", keep_, ": keep at least one checkpoint");
}

std::string CheckpointStore::write(const nn::Model& model, const CheckpointState& state, int crash_after_files) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  ST_CHECK(!ec, "creating checkpoint directory ", root_, ": ", ec.message());
  const std::string name = checkpoint_dir_name(state.meta.position.step);
  const std::string tmp = root_ + "/." + name + ".tmp";
  const std::string final_dir = root_ + "/" + name;
  remove_tree(tmp);
  fs::create_directory(tmp, ec);
  ST_CHECK(!ec, "creating ", tmp, ": ", ec.message());
  int written = 0;
  for (const char* file : {kCheckpointModelFile, kCheckpointOptimizerFile, kCheckpointTrainerFile}) {
    if (written == crash_after_files) std::_Exit(86);  // tests: a job killed between two files
    write_checkpoint_file(tmp, file, model, state);
    ++written;
  }
  fsync_path(tmp);
  remove_tree(final_dir);  // a checkpoint of the same step from an earlier, abandoned attempt
  fs::rename(tmp, final_dir, ec);
  ST_CHECK(!ec, "renaming ", tmp, " to ", final_dir, ": ", ec.message());
  fsync_path(root_);
  return final_dir;
}

void CheckpointStore::publish(const std::string& checkpoint_dir) {
  const std::string tmp = root_ + "/.latest.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << fs::path(checkpoint_dir).filename().string() << "\n";
    out.close();
    ST_CHECK(out.good(), "writing ", tmp, " failed");
  }
  fsync_path(tmp);
  std::error_code ec;
  fs::rename(tmp, root_ + "/latest", ec);
  ST_CHECK(!ec, "renaming ", tmp, " to latest: ", ec.message());
  fsync_path(root_);
  // Keep the newest `keep` complete checkpoints; drop leftovers of interrupted writes.
  std::vector<std::pair<int64_t, fs::path>> complete;
  for (const auto& e : fs::directory_iterator(root_)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && n[0] == '.' && n.compare(n.size() - 4, 4, ".tmp") == 0 && e.is_directory()) remove_tree(e.path());
    else if (const int64_t s = step_of(n); s >= 0 && e.is_directory()) complete.emplace_back(s, e.path());
  }
  std::sort(complete.begin(), complete.end());
  const std::string current = fs::path(checkpoint_dir).filename().string();
  for (size_t i = 0; i + static_cast<size_t>(keep_) < complete.size(); ++i)
    if (complete[i].second.filename().string() != current) remove_tree(complete[i].second);
}

std::string CheckpointStore::latest() const { return latest_checkpoint_in(root_); }

std::string resolve_checkpoint_path(const std::string& path, const std::string& what) {
  ST_USER_CHECK(fs::exists(path), what, " ", path, ": no such file or directory");
  if (fs::exists(path + "/" + kCheckpointTrainerFile)) return path;
  if (fs::exists(path + "/checkpoints/latest")) return latest_checkpoint_in(path + "/checkpoints");
  if (fs::exists(path + "/latest")) return latest_checkpoint_in(path);
  ST_USER_FAIL(what, " ", path, " is neither a checkpoint directory (with ", kCheckpointTrainerFile,
          ") nor a run directory with checkpoints/latest");
}

}  // namespace scaletrain::train
