// Resume compatibility checks (train/resume.hpp).
#include "scaletrain/train/resume.hpp"

#include <filesystem>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {
namespace {

struct KeyRule {
  const char* key;
  bool forceable;
  const char* consequence;
  bool added_later = false;  // a checkpoint written before the key was recorded implies its default
};

const std::vector<KeyRule>& rules() {
  static const std::vector<KeyRule> r = {
      {"model.name", false, "the parameters do not fit"},
      {"optimizer.name", false, "the optimizer state does not fit"},
      {"train.batch", true, "steps per epoch and data order change; continues at the next epoch boundary"},
      {"train.accumulate_steps", true,
       "the micro-batches (their BatchNorm statistics, the order of the gradient sums) change; the samples per "
       "update do not", true},
      {"train.precision", true, "the loss scaler starts afresh where fp16 is new"},
      {"train.epochs", true, "the learning-rate schedule spans the epochs and changes"},
      {"train.seed", true, "data order, augmentation and dropout change"},
      {"optimizer.schedule", true, "the learning-rate curve changes"},
      {"data.path", true, "another data set"},
      {"data.train_samples", true, "the training split changed size"},
      {"model.sync_bn", true, "BatchNorm's batch statistics change between per rank and over all ranks", true},
      {"optimizer.no_decay", true, "weight decay reaches other parameters", true},
      {"model.classifier_width", false, "the parameters do not fit", true},
      {"model.dropout", true, "the classifier's dropout rate changes", true},
      {"model.stem_stride", true, "the stem's stride, and every grid after it, change", true},
      {"model.vit.image_size", false, "the position embedding does not fit", true},
      {"model.vit.patch_size", false, "the parameters do not fit", true},
      {"model.vit.num_layers", false, "the parameters do not fit", true},
      {"model.vit.num_heads", true, "the attention heads change", true},
      {"model.vit.hidden_dim", false, "the parameters do not fit", true},
      {"model.vit.mlp_dim", false, "the parameters do not fit", true},
  };
  return r;
}

const std::string* find(const IdentityKeys& keys, const std::string& k) {
  for (const auto& [key, value] : keys)
    if (key == k) return &value;
  return nullptr;
}

std::string absolute_path(const std::string& p) {
  if (p == "synthetic") return p;
  std::error_code ec;
  const auto abs = std::filesystem::weakly_canonical(std::filesystem::absolute(p), ec);
  return ec ? p : abs.string();
}

// Registry values are TOML: strings come quoted.
std::string unquoted(const std::string& v) {
  return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
}

// What a checkpoint that lacks the key stands for: the default configuration's value where the key
// was added later, else a marker that differs from every value.
std::string unrecorded_value(const KeyRule& r) {
  return r.added_later ? unquoted(find_config_key(r.key)->get(RunConfig{})) : "(not recorded)";
}

}  // namespace

IdentityKeys identity_keys(const RunConfig& cfg, int64_t train_samples) {
  IdentityKeys k;
  for (const KeyRule& r : rules()) {
    const std::string key = r.key;
    if (key == "data.path") k.emplace_back(key, absolute_path(cfg.data_path));
    else if (key == "data.train_samples") k.emplace_back(key, std::to_string(train_samples));
    else if (key == "model.name") k.emplace_back(key, cfg.model);
    else k.emplace_back(key, unquoted(find_config_key(key)->get(cfg)));
  }
  return k;
}

std::vector<std::string> check_resume_compatible(const IdentityKeys& saved, const IdentityKeys& current,
                                                 const std::string& checkpoint, bool force) {
  std::vector<std::string> differing;
  bool blocking = false;
  for (const KeyRule& r : rules()) {
    const std::string* a = find(saved, r.key);
    const std::string* b = find(current, r.key);
    const std::string was = a ? *a : unrecorded_value(r);
    const std::string now = b ? *b : "(not set)";
    if (was == now) continue;
    differing.push_back(std::string(r.key) + ": checkpoint " + was + ", this run " + now + " (" + r.consequence +
                        (r.forceable ? ")" : "; cannot be forced)"));
    if (!r.forceable || !force) blocking = true;
  }
  if (!blocking) return differing;
  std::string msg = "cannot resume from " + checkpoint + ": its identity keys differ from this run's:";
  for (const auto& d : differing) msg += "\n  " + d;
  msg += force ? "\nrun.resume_force cannot override the keys marked so"
               : "\nset them as the checkpoint has them, or set run.resume_force = true where forceable";
  ST_FAIL(msg);
}

bool resume_mid_epoch(const CheckpointMeta& saved, const RunConfig& cfg, int world_size, std::string& why_not) {
  if (saved.position.step_in_epoch == 0) return true;
  if (saved.global_batch != cfg.batch) {
    why_not = "train.batch changed from " + std::to_string(saved.global_batch) + " to " + std::to_string(cfg.batch);
    return false;
  }
  if (cfg.data_mode == data::LoaderMode::stream && saved.world_size != world_size) {
    why_not = "data.mode = stream shards the epoch by rank, and the rank count changed from " +
              std::to_string(saved.world_size) + " to " + std::to_string(world_size);
    return false;
  }
  if (cfg.shuffle == "node" && saved.world_size != world_size) {
    why_not = "data.shuffle = node shares the split out by rank, and the rank count changed from " +
              std::to_string(saved.world_size) + " to " + std::to_string(world_size);
    return false;
  }
  if (saved.data_mode != data::loader_mode_name(cfg.data_mode)) {
    why_not = "data.mode changed from " + saved.data_mode + " to " + data::loader_mode_name(cfg.data_mode);
    return false;
  }
  return true;
}

}  // namespace scaletrain::train
