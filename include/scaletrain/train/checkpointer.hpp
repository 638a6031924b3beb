// Checkpointer: when and how a training run saves itself, and how a run picks up a checkpoint.
//
// When: every run.checkpoint_steps steps, every run.checkpoint_seconds on rank 0's clock (rank 0
// decides and the step's agreement carries it, so clock skew cannot split the ranks), when a stop
// signal arrives, and at the end of the run.
// How: every rank checksums its parameters and the ranks compare (silently diverged replicas are
// an error naming them); rank 0 writes the replicated state through the CheckpointStore; `latest`
// moves only once every rank knows the write succeeded.
// Resume: run.resume's checkpoint is resolved on rank 0, read on every rank, checked against this
// run's identity keys, and its state restored into the model, optimizer and loss scaler.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/nn/model.hpp"
#include "scaletrain/optim/loss_scaler.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/train/checkpoint_store.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/resume.hpp"

namespace scaletrain::train {

// What a checkpoint reads from and restores into.
struct TrainingState {
  Backend& backend;
  nn::Model& model;
  optim::Optimizer& optimizer;
  optim::LossScaler& scaler;
};

// One written checkpoint, as rank 0 reports it (metrics.jsonl's "checkpoint" record).
struct CheckpointRecord {
  std::string path;
  int64_t step = 0;
  int64_t bytes = 0;
  double seconds = 0;  // from the checksum to `latest`, on rank 0
};

// Where a resumed run came from (metrics.jsonl's "resumed_from" record).
struct ResumeRecord {
  std::string path;
  TrainingPosition saved;  // the checkpoint's position
  TrainingPosition start;  // where this run starts (the next epoch boundary where the position
                           // does not carry over)
  int saved_world_size = 1;
  std::string note;  // why the run starts at an epoch boundary, or what was forced ("" if nothing)
};

class Checkpointer {
 public:
  Checkpointer(const RunConfig& cfg, comm::Communicator& comm, IdentityKeys identity);
  // Checkpoints are written only with run.dir set.
  bool enabled() const { return store_.has_value(); }
  // Rank 0: whether run.checkpoint_seconds have passed since the start or the last checkpoint (the
  // trainer agrees on it with the other ranks; false elsewhere).
  bool time_due() const;
  // Whether a periodic checkpoint is due now that `step` steps are done; `by_time`: time_due() as
  // agreed by every rank.
  bool due(int64_t step, bool by_time) const;
  // Collective: checkpoints `state` at `position`. Returns rank 0's record (empty elsewhere).
  CheckpointRecord save(const TrainingState& state, const TrainingPosition& position);
  // The directory of the checkpoint of `step`, on every rank, if this run saved or resumed from it
  // ("" otherwise).
  std::string saved_path(int64_t step) const {
    return enabled() && step == last_saved_step_ ? store_->root() + "/" + checkpoint_dir_name(step) : "";
  }
  // A resumed run: the checkpoint of `step` exists (and `latest` may name it), so it is not
  // written again.
  void mark_saved(int64_t step) { last_saved_step_ = step; }

 private:
  CheckpointState snapshot(const TrainingState& state, const TrainingPosition& position, std::vector<float> params,
                           uint64_t checksum);
  void compare_checksums(uint64_t mine, int64_t step);

  const RunConfig& cfg_;
  comm::Communicator& comm_;
  IdentityKeys identity_;
  std::optional<CheckpointStore> store_;
  double last_time_;  // rank 0's clock at the start or the last checkpoint
  int64_t last_saved_step_ = -1;
  bool diverged_once_ = false;  // testing.inject_divergence_rank applies to the first checkpoint only
};

// Rank-local: the checkpoint directory run.resume names ("" without run.resume, or auto without a
// checkpoint yet). Error naming the path where it is not a checkpoint.
std::string resume_checkpoint_dir(const RunConfig& cfg);
// Rank-local: how the checkpoint run.resume names ran its bf16 GEMM-shaped operators ("bf16", "f32", or
// "" where there is no such checkpoint or it records no choice).
std::string resumed_bf16_gemm(const RunConfig& cfg);
// run.resume's checkpoint directory and its algorithm book as JSON ({"", ""} without run.resume;
// the book "" where the checkpoint has none).
std::pair<std::string, std::string> resumed_algorithms(const RunConfig& cfg);

// Collective. The checkpoint run.resume asks for, checked against this run and restored into
// `state`; std::nullopt when the run starts fresh (no run.resume, or auto without a checkpoint).
// `steps_per_epoch` places the start; rank 0 prints what happens.
std::optional<ResumeRecord> resume_from_checkpoint(const RunConfig& cfg, comm::Communicator& comm,
                                                   const TrainingState& state, const IdentityKeys& identity,
                                                   int64_t steps_per_epoch);

}  // namespace scaletrain::train
