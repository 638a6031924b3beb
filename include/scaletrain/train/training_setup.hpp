// The pieces of a training run that come straight from its configuration: the loaders of the
// training and evaluation splits, the learning-rate schedule, the optimizer and the loss scaler.
// Each throws Error naming the key or file at fault; the trainer wraps them in collective checks.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/optim/loss_scaler.hpp"
#include "scaletrain/optim/lr_schedule.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/train/config.hpp"

namespace scaletrain::nn {
class Model;
}

namespace scaletrain::train {

// The training split's loader options (shuffled, remainder per data.drop_remainder), and the
// evaluation split's (cfg.eval_split, in order, every sample counted once).
data::LoaderOptions train_loader_options(const RunConfig& cfg, const std::string& data_path, int64_t local_batch,
                                         Backend* backend);
data::LoaderOptions eval_loader_options(const data::LoaderOptions& train, const RunConfig& cfg);

// The schedule spans the configured epochs; train.max_steps only cuts a run short along it.
optim::LrScheduleOptions lr_schedule_options(const RunConfig& cfg, int64_t steps_per_epoch);
// The model's parameter tensors as the optimizer sees them, in flat-buffer order, under their slots'
// names ("3.bias", "blocks.0.fc1.bias"), marked norm where the layer says so.
std::vector<optim::ParameterTensor> optimizer_tensors(const nn::Model& model);
// The optimizer over the model's flat parameter buffer, with optimizer.no_decay applied to its tensors.
std::unique_ptr<optim::Optimizer> make_optimizer(const RunConfig& cfg, Backend& backend, const nn::Model& model);
// Enabled for train.precision = fp16 only.
optim::LossScalerOptions loss_scaler_options(const RunConfig& cfg);

}  // namespace scaletrain::train
