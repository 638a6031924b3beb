// The checkpoint format: one directory, three HDF5 files, readable with h5py and no scaletrain code.
//
//   model.h5      one f32 dataset per parameter, named and laid out as the PyTorch twin's state_dict
//                 (nn/torch_twin.hpp): torch's load_state_dict(strict=True) takes them as they are.
//   optimizer.h5  attrs name ("sgd" | "adamw" | "lars" | "lamb"), steps; a group per state buffer ("momentum_buffer";
//                 "exp_avg", "exp_avg_sq", torch's names) holding one dataset per parameter, as
//                 model.h5.
//   trainer.h5    attrs: the position (step, epoch, step_in_epoch, seed), the loss scaler (scale,
//                 clean steps in a row, skipped steps), world_size, global_batch, data_mode,
//                 git_commit, config (the resolved TOML) and config_hash, the identity keys and their values,
//                 the parameter checksum every rank agreed on, and cpu_bf16_gemm (how the bf16 GEMM-shaped
//                 operators computed, where there was a choice: train/bf16_gemm_choice.hpp) and
//                 algorithms (the book of the cuDNN and cuBLASLt algorithms the operators ran, as JSON,
//                 where the backend chooses: train/algorithm_choice.hpp).
//
// Every file carries the attr format_version. Reading checks every name and shape against the
// model and fails naming the file and the dataset. Directory handling (temporary name, fsync,
// rename, `latest`) is checkpoint_store.hpp's.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "scaletrain/nn/model.hpp"

namespace scaletrain::train {

inline constexpr int kCheckpointFormatVersion = 1;

// Where training stands: `step` optimizer steps are done; the next step is step `step_in_epoch`
// of epoch `epoch`.
struct TrainingPosition {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t step_in_epoch = 0;
};

struct CheckpointMeta {
  TrainingPosition position;
  uint64_t seed = 0;
  double loss_scale = 1;
  int64_t loss_scale_clean_steps = 0;
  int64_t skipped_steps = 0;
  int world_size = 1;
  int64_t global_batch = 0;
  std::string data_mode;  // "stage" | "stream"
  std::string git_commit;
  std::string config_toml;
  uint64_t config_hash = 0;  // config_hash() of the configuration, as run.json's
  std::vector<std::pair<std::string, std::string>> identity;  // key, value (train/resume.hpp)
  uint64_t parameter_checksum = 0;
  std::string bf16_gemm;  // "bf16" | "f32"; "" where the run had no choice (not bf16, or one way)
  std::string algorithms;  // the algorithm book as JSON (train/algorithm_choice.hpp); "" where no choice
};

// Host copies of the replicated state, in our flat layouts (Model::flat_parameters()).
struct CheckpointState {
  CheckpointMeta meta;
  std::vector<float> parameters;
  // The model's buffers (Model::flat_buffers), empty where it has none of that type.
  std::vector<float> buffers_f32;
  std::vector<int64_t> buffers_i64;
  std::string optimizer;  // "sgd" | "adamw" | "lars" | "lamb"
  int64_t optimizer_steps = 0;
  std::vector<std::string> optimizer_buffer_names;
  std::vector<std::vector<float>> optimizer_buffers;  // each flat, like parameters
};

// File names inside a checkpoint directory, in the order they are written.
inline constexpr const char* kCheckpointModelFile = "model.h5";
inline constexpr const char* kCheckpointOptimizerFile = "optimizer.h5";
inline constexpr const char* kCheckpointTrainerFile = "trainer.h5";

// Writes one file of `state` into `dir` (which exists) and fsyncs it. Error naming the file.
void write_checkpoint_file(const std::string& dir, const char* file, const nn::Model& model,
                           const CheckpointState& state);
// Reads a checkpoint for `model` (names and shapes must match). Error naming the file and dataset.
CheckpointState read_checkpoint(const std::string& dir, const nn::Model& model);
// trainer.h5 alone (no model needed): for resume's compatibility check and st-checkpoint.
CheckpointMeta read_checkpoint_meta(const std::string& dir);
// Makes a written file, or a directory's entries, durable (fsync). Error naming the path.
void fsync_path(const std::string& path);

// A 64-bit FNV-1a-style hash of `n` floats' bytes: the checksum ranks compare at every checkpoint;
// any one changed float changes it.
uint64_t parameter_checksum(const float* values, int64_t n);

}  // namespace scaletrain::train
