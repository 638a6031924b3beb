// Loaders, schedule, optimizer and loss scaler from a RunConfig (train/training_setup.hpp).
#include "scaletrain/train/training_setup.hpp"

#include <cmath>
#include <utility>

#include "scaletrain/core/error.hpp"
#include "scaletrain/nn/model.hpp"

namespace scaletrain::train {

data::LoaderOptions train_loader_options(const RunConfig& cfg, const std::string& data_path, int64_t local_batch,
                                         Backend* backend) {
  data::LoaderOptions lo;
  lo.path = data_path;
  lo.split = "train";
  lo.batch = local_batch;
  lo.seed = cfg.seed;
  lo.mode = cfg.data_mode;
  lo.prefetch = static_cast<int>(cfg.prefetch);
  lo.drop_remainder = cfg.drop_remainder;
  lo.shuffle = true;
  lo.backend = backend;
  lo.stage.copy = cfg.stage_copy;
  lo.stage.node_ranks = static_cast<int>(cfg.node_ranks);
  lo.stage.memory_gb = cfg.stage_memory_gb;
  lo.stage.dir = cfg.stage_dir;
  lo.stage.node_shuffle = cfg.shuffle == "node";
  lo.stage.hang_rank = static_cast<int>(cfg.inject_stage_hang_rank);
  return lo;
}

data::LoaderOptions eval_loader_options(const data::LoaderOptions& train, const RunConfig& cfg) {
  data::LoaderOptions eo = train;
  eo.split = cfg.eval_split;
  eo.shuffle = false;
  eo.drop_remainder = false;
  return eo;
}

optim::LrScheduleOptions lr_schedule_options(const RunConfig& cfg, int64_t steps_per_epoch) {
  double base_lr = cfg.lr;
  if (cfg.scale_lr) base_lr = optim::linear_scaled_lr(static_cast<float>(cfg.lr), cfg.batch, cfg.reference_batch);
  optim::LrScheduleOptions so;
  so.kind = cfg.schedule;
  so.base_lr = static_cast<float>(base_lr);
  so.warmup_steps = static_cast<int64_t>(std::llround(cfg.warmup_epochs * static_cast<double>(steps_per_epoch)));
  so.step_size = cfg.step_epochs * steps_per_epoch;
  so.gamma = static_cast<float>(cfg.gamma);
  so.total_steps = cfg.epochs * steps_per_epoch;
  so.min_lr = static_cast<float>(cfg.min_lr);
  so.power = static_cast<float>(cfg.poly_power);
  return so;
}

std::vector<optim::ParameterTensor> optimizer_tensors(const nn::Model& model) {
  std::vector<optim::ParameterTensor> tensors;
  for (const nn::ParameterSlot& s : model.slots()) {
    const nn::Parameter& p = model.layers()[s.layer]->parameters()[s.index];
    tensors.push_back(optim::ParameterTensor{s.name, s.offset, s.count, p.norm, p.embedding});
  }
  return tensors;
}

namespace {

std::unique_ptr<optim::Optimizer> make_optimizer(const RunConfig& cfg, Backend& backend,
                                                 std::vector<optim::ParameterTensor> tensors) {
  if (cfg.optimizer == optim::OptimizerKind::sgd) {
    optim::SgdOptions o;
    o.momentum = static_cast<float>(cfg.momentum);
    o.nesterov = cfg.nesterov;
    o.weight_decay = static_cast<float>(cfg.weight_decay);
    return optim::make_sgd(o, backend, std::move(tensors), cfg.no_decay);
  }
  if (cfg.optimizer == optim::OptimizerKind::lars) {
    optim::LarsOptions o;
    o.momentum = static_cast<float>(cfg.momentum);
    o.weight_decay = static_cast<float>(cfg.weight_decay);
    o.trust_coefficient = static_cast<float>(cfg.trust_coefficient);
    o.exclude_bias_norm = cfg.exclude_bias_norm;
    return optim::make_lars(o, backend, std::move(tensors), cfg.no_decay);
  }
  if (cfg.optimizer == optim::OptimizerKind::lamb) {
    optim::LambOptions o;
    o.beta1 = static_cast<float>(cfg.beta1);
    o.beta2 = static_cast<float>(cfg.beta2);
    o.eps = static_cast<float>(cfg.eps);
    o.weight_decay = static_cast<float>(cfg.weight_decay);
    o.exclude_bias_norm = cfg.exclude_bias_norm;
    return optim::make_lamb(o, backend, std::move(tensors), cfg.no_decay);
  }
  optim::AdamWOptions o;
  o.beta1 = static_cast<float>(cfg.beta1);
  o.beta2 = static_cast<float>(cfg.beta2);
  o.eps = static_cast<float>(cfg.eps);
  o.weight_decay = static_cast<float>(cfg.weight_decay);
  return optim::make_adamw(o, backend, std::move(tensors), cfg.no_decay);
}

}  // namespace

std::unique_ptr<optim::Optimizer> make_optimizer(const RunConfig& cfg, Backend& backend, const nn::Model& model) {
  return make_optimizer(cfg, backend, optimizer_tensors(model));
}

optim::LossScalerOptions loss_scaler_options(const RunConfig& cfg) {
  optim::LossScalerOptions lo;
  lo.enabled = cfg.precision == Precision::fp16;
  lo.init = cfg.loss_scale_init;
  lo.growth = cfg.loss_scale_growth;
  lo.backoff = cfg.loss_scale_backoff;
  lo.interval = cfg.loss_scale_interval;
  return lo;
}

}  // namespace scaletrain::train
