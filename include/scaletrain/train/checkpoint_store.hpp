// CheckpointStore: the checkpoints of one run directory, run.dir/checkpoints/.
//
//   step-<N>/   a complete checkpoint (train/checkpoint.hpp). It is written as .step-<N>.tmp/, each
//               file fsynced, the directory fsynced, then renamed into place.
//   latest      the name of the newest complete checkpoint ("step-<N>\n"), replaced by rename only
//               after every rank has finished that checkpoint.
//
// A job killed mid-write leaves a .tmp directory and `latest` on the previous good checkpoint;
// the next publish() removes the leftovers. Only the newest `keep` checkpoints are kept.
// All writes are rank 0's (the trainer's state is replicated).
#pragma once
#include <cstdint>
#include <string>

#include "scaletrain/train/checkpoint.hpp"

namespace scaletrain::train {

class CheckpointStore {
 public:
  CheckpointStore(std::string run_dir, int64_t keep);
  const std::string& root() const { return root_; }

  // Writes `state` as step-<state.meta.position.step>/ and returns its path. Tests: with
  // crash_after_files >= 0 the process exits (status 86) after writing that many files.
  std::string write(const nn::Model& model, const CheckpointState& state, int crash_after_files = -1);
  // Points `latest` at `checkpoint_dir` (atomically), then prunes old checkpoints and leftovers.
  void publish(const std::string& checkpoint_dir);
  // The checkpoint `latest` names, or "" when there is none.
  std::string latest() const;

 private:
  std::string root_;
  int64_t keep_;
};

std::string checkpoint_dir_name(int64_t step);  // "step-<N>"

// What run.resume = <path> names: a checkpoint directory (it holds trainer.h5), or a run
// directory or its checkpoints/ directory (their `latest`). A UserError naming `what` (the setting
// or argument that gave the path: "run.resume =") and the path otherwise.
std::string resolve_checkpoint_path(const std::string& path, const std::string& what);

}  // namespace scaletrain::train
