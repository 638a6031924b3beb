// Resume compatibility: the identity keys a checkpoint records and a resumed run must match.
//
//   key               forceable  when it differs
//   model.name        no         the parameters do not fit
//   optimizer.name    no         the optimizer state does not fit
//   train.batch       yes        the global batch: steps per epoch and the data order change; a forced
//                                resume continues at the next epoch boundary
//   train.precision   yes        the loss scaler starts afresh when fp16 is new
//   train.epochs      yes        the schedule (cosine, warm-up) spans the epochs and changes
//   train.seed        yes        data order, augmentation and dropout change
//   optimizer.schedule yes       the learning-rate curve changes
//   data.path         yes        another data set (compared as an absolute path)
//   data.train_samples yes       the data set's training split changed size
//
// Anything else (run.dir, train.max_steps, run.threads, logging, the rank count) may differ.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "scaletrain/train/checkpoint.hpp"
#include "scaletrain/train/config.hpp"

namespace scaletrain::train {

using IdentityKeys = std::vector<std::pair<std::string, std::string>>;

// This run's identity keys, in the order of the table above.
IdentityKeys identity_keys(const RunConfig& cfg, int64_t train_samples);

// Throws Error listing every differing key with the checkpoint's and this run's values (and why it
// matters) when a non-forceable key differs, or a forceable one without run.resume_force. With the
// force, returns the lines to print about what was overridden.
std::vector<std::string> check_resume_compatible(const IdentityKeys& saved, const IdentityKeys& current,
                                                 const std::string& checkpoint, bool force);

// Whether the loader position of a checkpoint carries over to this run (otherwise the run continues
// at the next epoch boundary): the same global batch, and in stream mode the same rank count.
bool resume_mid_epoch(const CheckpointMeta& saved, const RunConfig& cfg, int world_size, std::string& why_not);

}  // namespace scaletrain::train
