// The RunConfig registry, TOML loading, overrides, validation and canonical printing.
#include "scaletrain/train/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/join.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/train/layer_profile.hpp"

namespace scaletrain::train {
namespace {

// A TOML string's value without its quotes (other values as they are).
std::string unquoted(const std::string& v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') return v.substr(1, v.size() - 2);
  return v;
}

// `s` in quotes, appended piecewise: GCC 12 warns falsely (-Wrestrict) on "\"" + s.
std::string quoted(const std::string& s) {
  std::string q(1, '"');
  q += s;
  q += '"';
  return q;
}

std::string format_double(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".eE") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";
  return s;
}

template <class T>
ConfigKey key_of(std::string key, T RunConfig::*field, std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.help = std::move(help);
  const std::string name = k.key;
  if constexpr (std::is_same_v<T, std::string>) {
    k.type = "string";
    k.get = [field](const RunConfig& c) { return quoted(c.*field); };
    k.set = [field](RunConfig& c, const std::string& v) { c.*field = unquoted(v); };
  } else if constexpr (std::is_same_v<T, bool>) {
    k.type = "bool";
    k.get = [field](const RunConfig& c) { return std::string(c.*field ? "true" : "false"); };
    k.set = [field, name](RunConfig& c, const std::string& v) {
      if (v == "true" || v == "1" || v == "yes" || v == "on")
        c.*field = true;
      else if (v == "false" || v == "0" || v == "no" || v == "off")
        c.*field = false;
      else
        ST_USER_FAIL("configuration key '", name, "' expects true or false, got '", v, "'");
    };
  } else if constexpr (std::is_same_v<T, double>) {
    k.type = "float";
    k.get = [field](const RunConfig& c) { return format_double(c.*field); };
    k.set = [field, name](RunConfig& c, const std::string& v) {
      size_t used = 0;
      double d = 0;
      try {
        d = std::stod(v, &used);
      } catch (...) {
        used = 0;
      }
      ST_USER_CHECK(used == v.size() && !v.empty(), "configuration key '", name, "' expects a number, got '", v, "'");
      c.*field = d;
    };
  } else {
    k.type = "int";
    k.get = [field](const RunConfig& c) { return std::to_string(c.*field); };
    k.set = [field, name](RunConfig& c, const std::string& v) {
      size_t used = 0;
      long long d = 0;
      try {
        d = std::stoll(v, &used);
      } catch (...) {
        used = 0;
      }
      ST_USER_CHECK(used == v.size() && !v.empty(), "configuration key '", name, "' expects an integer, got '", v, "'");
      c.*field = static_cast<T>(d);
    };
  }
  return k;
}

// A mode key: TOML string, parsed into its enum at once (the parser's Error names the key).
template <class E>
ConfigKey enum_key(std::string key, E RunConfig::*field, E (*parse)(const std::string&),
                   std::string (*name)(E), std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.help = std::move(help);
  k.type = "string";
  k.get = [field, name](const RunConfig& c) { return quoted(name(c.*field)); };
  k.set = [field, parse](RunConfig& c, const std::string& v) { c.*field = parse(unquoted(v)); };
  return k;
}

// comm.bucket_mb: "auto" (a TOML string) or a positive number.
ConfigKey bucket_size_key(std::string key, std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.help = std::move(help);
  k.type = "auto|float";
  k.get = [](const RunConfig& c) {
    const std::string t = comm::bucket_size_setting_text(c.bucket_mb);
    return c.bucket_mb.automatic ? "\"" + t + "\"" : t;
  };
  k.set = [](RunConfig& c, const std::string& v) { c.bucket_mb = comm::parse_bucket_size_setting(v); };
  return k;
}

// run.cudnn_workspace_mb: "auto" (a TOML string) or a number of MiB >= 0.
ConfigKey workspace_key(std::string key, std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.help = std::move(help);
  k.type = "auto|int";
  k.get = [](const RunConfig& c) {
    return c.cudnn_workspace_mb == RunConfig::kAutoWorkspace ? std::string("\"auto\"")
                                                              : std::to_string(c.cudnn_workspace_mb);
  };
  k.set = [name = k.key](RunConfig& c, const std::string& v) {
    const std::string s = unquoted(v);
    if (s == "auto") {
      c.cudnn_workspace_mb = RunConfig::kAutoWorkspace;
      return;
    }
    size_t used = 0;
    long long d = -1;
    try {
      d = std::stoll(s, &used);
    } catch (...) {
      used = 0;
    }
    ST_USER_CHECK(used == s.size() && !s.empty() && d >= 0, "configuration key '", name,
                  "' expects auto or a number of MiB >= 0, got '", v, "'");
    c.cudnn_workspace_mb = d;
  };
  return k;
}

// run.cpu_bf16_gemm: auto, bf16, f32, or another run's run.json (its choice, pinned).
ConfigKey bf16_gemm_key(std::string key, std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.help = std::move(help);
  k.type = "string";
  k.get = [](const RunConfig& c) {
    return quoted(c.cpu_bf16_gemm_pin.empty() ? bf16_gemm_compute_name(c.cpu_bf16_gemm) : c.cpu_bf16_gemm_pin);
  };
  k.set = [](RunConfig& c, const std::string& v) {
    const std::string s = unquoted(v);
    c.cpu_bf16_gemm_pin.clear();
    if (s == "auto" || s == "bf16" || s == "f32") {
      c.cpu_bf16_gemm = parse_bf16_gemm_compute(s);
      return;
    }
    ST_USER_CHECK(!s.empty(), "run.cpu_bf16_gemm is empty: auto, bf16, f32, or a run's run.json");
    c.cpu_bf16_gemm = Bf16GemmCompute::automatic;
    c.cpu_bf16_gemm_pin = s;
  };
  return k;
}

// optimizer.no_decay: a list of categories, kept in the enum's order without repeats so that the
// printed form is canonical; an unknown category's Error names the key and the allowed values.
ConfigKey no_decay_key(std::string key, std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.help = std::move(help);
  k.type = "list";
  k.get = [](const RunConfig& c) {
    std::string text(1, '[');  // appended piecewise, as in enum_key
    for (optim::NoDecayCategory cat : c.no_decay) {
      if (text.size() > 1) text += ", ";
      text += '"';
      text += optim::no_decay_category_name(cat);
      text += '"';
    }
    text += ']';
    return text;
  };
  k.set = [](RunConfig& c, const std::string& v) {
    std::vector<optim::NoDecayCategory> cats;
    for (const std::string& item : config_list_items(v)) cats.push_back(optim::parse_no_decay_category(item));
    std::sort(cats.begin(), cats.end());
    cats.erase(std::unique(cats.begin(), cats.end()), cats.end());
    c.no_decay = std::move(cats);
  };
  return k;
}

// model.input: a TOML string "H,W,C" ("": the data set's shape).
ConfigKey model_input_key(std::string key, std::string help) {
  ConfigKey k;
  k.key = std::move(key);
  k.help = std::move(help);
  k.type = "string";
  k.get = [](const RunConfig& c) {
    std::string text(1, '"');  // appended piecewise, as in enum_key
    for (size_t i = 0; i < c.model_input.size(); ++i) {
      if (i > 0) text += ',';
      text += std::to_string(c.model_input[i]);
    }
    text += '"';
    return text;
  };
  k.set = [](RunConfig& c, const std::string& v) {
    c.model_input = parse_model_input(unquoted(v));
  };
  return k;
}

bool has_default_value(const ConfigKey& k, const RunConfig& cfg) {
  static const RunConfig defaults;
  return k.get(cfg) == k.get(defaults);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string toml_value_text(const toml::node& n, const std::string& key, const std::string& origin) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) return format_double(f->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto a = n.as_array()) {
    const ConfigKey* k = find_config_key(key);  // an unknown key is reported by set_config_value
    ST_USER_CHECK(k == nullptr || k->type == "list", origin, ": key '", key, "' takes one value (", k->type,
                  "), not an array");
    std::vector<std::string> items;
    for (const toml::node& item : *a) {
      const auto* s = item.as_string();
      ST_USER_CHECK(s != nullptr, origin, ": key '", key, "' must be an array of strings");
      items.push_back(s->get());
    }
    return join(items, ",");
  }
  ST_USER_FAIL(origin, ": key '", key, "' must be a string, number, boolean or array of strings");
}

void walk(RunConfig& cfg, const toml::table& t, const std::string& prefix, const std::string& origin) {
  for (const auto& [k, v] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const auto* sub = v.as_table()) {
      walk(cfg, *sub, key, origin);
      continue;
    }
    set_config_value(cfg, key, toml_value_text(v, key, origin), origin);
  }
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = {
      key_of("model.name", &RunConfig::model,
             "zoo model: " + join(nn::zoo_model_names()) + " (--help lists them at its end)"),
      model_input_key("model.input",
                      "per-sample input H,W,C the model is built for (empty: the data set's; set, it must match it)"),
      key_of("model.classes", &RunConfig::model_classes,
             "classes the model is built for (0: the data set's; set, it must match it). With model.input set too, "
             "--summary needs no data set"),
      key_of("model.classifier_width", &RunConfig::classifier_width,
             "width of the hidden classifier layers where the network has them (vgg16: 4096; 0: the network's own)"),
      key_of("model.dropout", &RunConfig::dropout,
             "the classifier's dropout rate where the network has one (mobilenet_v2 0.2, vgg16 and inception_v3 0.5; "
             "negative: the network's own)"),
      key_of("model.stem_stride", &RunConfig::stem_stride,
             "the stem convolution's stride where the network lets it change (mobilenet_v2: 2; 1 for 28x28 images; 0: "
             "the network's own)"),
      key_of("model.vit.image_size", &RunConfig::vit_image_size,
             "a ViT's image size (torchvision's image_size): set, it must be the input's height and width (0: the "
             "input's)"),
      key_of("model.vit.patch_size", &RunConfig::vit_patch_size,
             "model.name = vit: the patch size, the patch embedding's kernel and stride (0: 16)"),
      key_of("model.vit.num_layers", &RunConfig::vit_num_layers, "model.name = vit: encoder blocks (0: 12)"),
      key_of("model.vit.num_heads", &RunConfig::vit_num_heads,
             "model.name = vit: attention heads, which hidden_dim divides into (0: 3)"),
      key_of("model.vit.hidden_dim", &RunConfig::vit_hidden_dim, "model.name = vit: the token width (0: 192)"),
      key_of("model.vit.mlp_dim", &RunConfig::vit_mlp_dim, "model.name = vit: the MLP's hidden width (0: 768)"),
      key_of("model.sync_bn", &RunConfig::sync_bn,
             "SyncBatchNorm: BatchNorm statistics over the global batch, summed over the ranks (false: each "
             "rank's own, rank 0's running statistics broadcast before evaluation and checkpoints)"),
      key_of("data.path", &RunConfig::data_path, "HDF5 dataset (data-tools format v1), or \"synthetic\""),
      enum_key("data.mode", &RunConfig::data_mode, data::parse_loader_mode, data::loader_mode_name,
               "stage (read the data into memory) or stream (chunked reads)"),
      enum_key("data.stage_copy", &RunConfig::stage_copy, data::parse_stage_copy, data::stage_copy_name,
               "stage mode: node (one copy per node in MPI shared memory, each byte of the file read once per job) "
               "or rank (every rank reads its own copy)"),
      key_of("data.node_ranks", &RunConfig::node_ranks,
             "stage mode: every K ranks of a machine stage as one node (0: one node per machine)"),
      key_of("data.stage_memory_gb", &RunConfig::stage_memory_gb,
             "stage mode: the most a node's copy may take, GB (0: 3/4 of the memory available at start-up); a "
             "larger split fails before reading unless data.stage_dir is set"),
      key_of("data.stage_dir", &RunConfig::stage_dir,
             "stage mode with data.shuffle = node: a node-local directory (NVMe, tmpfs) for each node's share"),
      key_of("data.shuffle", &RunConfig::shuffle,
             "global (every epoch one permutation of the split: N ranks train as 1) or node (each node shuffles "
             "its own share in data.stage_dir; the order then depends on the node count)"),
      key_of("data.synthetic_samples", &RunConfig::synthetic_samples, "training samples when data.path is synthetic"),
      key_of("data.prefetch", &RunConfig::prefetch, "batches the reader thread keeps ready"),
      key_of("data.augment", &RunConfig::augment, "random crop (with padding) and horizontal flip on training batches"),
      key_of("data.augment_pad", &RunConfig::augment_pad, "padding of the random crop, pixels"),
      key_of("data.augment_flip", &RunConfig::augment_flip, "random horizontal flips when augmenting"),
      key_of("data.drop_remainder", &RunConfig::drop_remainder,
             "drop the samples that do not fill a global batch (else pad by wrapping around)"),
      key_of("data.normalize", &RunConfig::normalize,
             "file: normalize every channel by the file's training-split mean/std (a file without them is refused: "
             "st-info --add-stats FILE adds them); none: train on the raw values"),
      key_of("train.epochs", &RunConfig::epochs, "passes over the training split"),
      key_of("train.batch", &RunConfig::batch,
             "global batch per update (per-rank batch x ranks x train.accumulate_steps); must divide by the ranks x "
             "train.accumulate_steps"),
      key_of("train.accumulate_steps", &RunConfig::accumulate_steps,
             "micro-batches per update: each rank sums the gradients of K micro-batches of train.batch / (ranks x K) "
             "samples, one all-reduce per update overlapping the last micro-batch's backward; the mean is over all "
             "K x ranks micro-batches; the schedule, logs and checkpoints count updates"),
      key_of("train.seed", &RunConfig::seed, "seed of initialization, shuffling, dropout and augmentation"),
      key_of("train.log_every", &RunConfig::log_every, "steps between progress lines on rank 0"),
      key_of("train.max_steps", &RunConfig::max_steps, "stop after this many steps in total (0: no limit)"),
      key_of("train.warmup_log_steps", &RunConfig::warmup_log_steps, "first steps excluded from samples/s"),
      key_of("train.evaluate", &RunConfig::evaluate, "evaluate on train.eval_split after every epoch"),
      key_of("train.eval_split", &RunConfig::eval_split, "split used for evaluation (test or val)"),
      key_of("train.target_accuracy", &RunConfig::target_accuracy,
             "evaluation accuracy (0..1) whose time from run start run.json reports as time_to_accuracy_s (0: none)"),
      key_of("train.stop_at_target", &RunConfig::stop_at_target,
             "end the run after the first evaluation at or above train.target_accuracy"),
      enum_key("train.precision", &RunConfig::precision, parse_precision, precision_name,
               "compute type of the layers: fp32, bf16 or fp16 (fp32 master weights, optimizer state, loss and "
               "accumulation; fp16 adds a dynamic loss scaler)"),
      key_of("train.allow_tf32", &RunConfig::allow_tf32,
             "fp32 on cuda: convolutions and GEMMs may use TF32 tensor cores (10-bit mantissa products; PyTorch's "
             "allow_tf32)"),
      enum_key("train.on_nonfinite", &RunConfig::on_nonfinite, parse_nonfinite_policy, nonfinite_policy_name,
               "fp32/bf16: a step with an inf/NaN loss or gradient stops the run with a message (stop) or is skipped "
               "by every rank and counted (skip); fp16's loss scaler skips such steps itself"),
      enum_key("optimizer.name", &RunConfig::optimizer, optim::parse_optimizer_kind, optim::optimizer_kind_name,
               "sgd, adamw, lars (layer-wise trust ratios with momentum, MLPerf ResNet-50's) or lamb (Adam's moments "
               "with layer-wise trust ratios)"),
      key_of("optimizer.lr", &RunConfig::lr, "base learning rate"),
      key_of("optimizer.momentum", &RunConfig::momentum, "SGD and LARS momentum"),
      key_of("optimizer.nesterov", &RunConfig::nesterov, "SGD Nesterov momentum"),
      key_of("optimizer.weight_decay", &RunConfig::weight_decay, "L2 weight decay (SGD) or decoupled decay (AdamW)"),
      no_decay_key("optimizer.no_decay",
                   "tensors without weight decay: bias (names ending in .bias), norm (normalization layers' "
                   "parameters), embedding (a transformer's class token and position embedding); a TOML array, "
                   "or bias,norm on the command line"),
      key_of("optimizer.beta1", &RunConfig::beta1, "AdamW and LAMB beta1"),
      key_of("optimizer.beta2", &RunConfig::beta2, "AdamW and LAMB beta2"),
      key_of("optimizer.eps", &RunConfig::eps, "AdamW and LAMB epsilon"),
      key_of("optimizer.trust_coefficient", &RunConfig::trust_coefficient,
             "LARS: eta of the trust ratio eta ||w|| / (||g|| + weight_decay ||w||)"),
      key_of("optimizer.exclude_bias_norm", &RunConfig::exclude_bias_norm,
             "LARS and LAMB: biases and normalization parameters take neither the trust ratio nor weight decay "
             "(MLPerf's ResNet-50 reference)"),
      enum_key("optimizer.schedule", &RunConfig::schedule, optim::parse_lr_schedule_kind, optim::lr_schedule_kind_name,
               "learning-rate schedule: constant, step, cosine, poly (to optimizer.min_lr, power optimizer.poly_power)"),
      key_of("optimizer.warmup_epochs", &RunConfig::warmup_epochs,
             "linear warm-up length in epochs (may be fractional)"),
      key_of("optimizer.step_epochs", &RunConfig::step_epochs,
             "step schedule: multiply the rate by gamma every this many epochs"),
      key_of("optimizer.gamma", &RunConfig::gamma, "step schedule factor"),
      key_of("optimizer.min_lr", &RunConfig::min_lr, "cosine and poly schedules: final learning rate"),
      key_of("optimizer.poly_power", &RunConfig::poly_power, "poly schedule: lr = min_lr + (lr - min_lr) (1 - t / T)^power"),
      key_of("optimizer.scale_lr", &RunConfig::scale_lr, "linear scaling rule: lr x batch / reference_batch"),
      key_of("optimizer.reference_batch", &RunConfig::reference_batch,
             "batch size the base learning rate is tuned for"),
      key_of("optimizer.loss_scale_init", &RunConfig::loss_scale_init, "fp16: initial loss scale"),
      key_of("optimizer.loss_scale_growth", &RunConfig::loss_scale_growth,
             "fp16: factor the loss scale grows by after loss_scale_interval clean steps"),
      key_of("optimizer.loss_scale_backoff", &RunConfig::loss_scale_backoff,
             "fp16: factor the loss scale shrinks by on a step with inf/NaN gradients (the step is skipped)"),
      key_of("optimizer.loss_scale_interval", &RunConfig::loss_scale_interval,
             "fp16: clean steps in a row before the loss scale grows"),
      bucket_size_key("comm.bucket_mb",
                      "gradient bucket size: auto (an all-reduce probe at start-up and backward timed in the first "
                      "steps pick the size with the least predicted exposed all-reduce time; run.json records it) or "
                      "a fixed size in MB"),
      enum_key("comm.progress", &RunConfig::progress, comm::parse_comm_progress, comm::comm_progress_name,
               "all-reduce progress during backward: test (MPI_Test polls between layers) or thread (a communication "
               "thread)"),
      enum_key("comm.dtype", &RunConfig::comm_dtype, parse_precision, precision_name,
               "gradient type on the wire: fp32, bf16 or fp16 (half the bytes; fp16 is divided by the world size "
               "before the sum)"),
      enum_key("comm.backend", &RunConfig::comm_backend, comm::parse_comm_backend, comm::comm_backend_name,
               "gradient transport: auto (nccl on run.device = cuda, mpi elsewhere), nccl (NCCL on the device's comm "
               "stream; on sim, the NCCL path simulated with MPI on the comm stream) or mpi (host MPI; device "
               "gradients are staged through pinned host buffers)"),
      key_of("run.dir", &RunConfig::run_dir,
             "run directory for config.toml, metrics.jsonl, run.json and checkpoints (empty: none); one holding "
             "another run's files is refused unless run.resume continues it or run.overwrite is set"),
      key_of("run.overwrite", &RunConfig::overwrite,
             "start afresh in a run.dir that holds another run's files, moving them aside to <run.dir>.<time>"),
      key_of("run.timeline", &RunConfig::timeline,
             "write run.dir/timeline.json: every rank's phases and all-reduces (chrome://tracing, Perfetto)"),
      key_of("run.profile", &RunConfig::profile,
             "none; layers: time each layer's forward and backward, the loss, the optimizer, the exposed all-reduce "
             "and the input over the measured steps (run.dir/profile.json and a table; one synchronization per "
             "step); kernels: the device's kernels (cuda: CUPTI; sim: its streams' work items); or layers,kernels"),
      key_of("run.mllog", &RunConfig::mllog,
             "rank 0 writes MLPerf-HPC-style :::MLLOG lines to stdout and run.dir/mllog.log"),
      key_of("run.mllog_submission.org", &RunConfig::submission_org,
             "MLLOG submission_org: the submitting organization (empty: not logged)"),
      key_of("run.mllog_submission.platform", &RunConfig::submission_platform,
             "MLLOG submission_platform (empty: a description of the nodes, their GPUs or CPU model)"),
      key_of("run.mllog_submission.division", &RunConfig::submission_division,
             "MLLOG submission_division: closed or open (empty: not logged)"),
      key_of("run.mllog_submission.status", &RunConfig::submission_status,
             "MLLOG submission_status: cloud, onprem, preview or research (empty: not logged)"),
      key_of("run.mllog_submission.benchmark", &RunConfig::submission_benchmark,
             "MLLOG submission_benchmark (MLPerf HPC 3.0 knows deepcam, cosmoflow, oc20 and openfold; empty: not "
             "logged)"),
      key_of("run.clear_cache", &RunConfig::clear_cache,
             "drop the data file from each host's page cache before staging (MLLOG cache_clear)"),
      key_of("run.threads", &RunConfig::threads, "compute threads per rank (0: the cores the rank is bound to)"),
      enum_key("run.device", &RunConfig::device, parse_device_kind, device_kind_name,
               "compute device: auto (cuda where the build has it and a GPU is visible, else cpu; said at start-up), "
               "cpu (oneDNN), sim (a simulated GPU: device memory, stream threads, events), cuda "
               "(cuDNN, cuBLASLt, NCCL; a build with SCALETRAIN_ENABLE_CUDA)"),
      key_of("run.deterministic", &RunConfig::deterministic,
             "cuda: deterministic cuDNN and cuBLASLt algorithms only (no atomics in backward-filter, no split-K with "
             "a nondeterministic reduction); bitwise resume and N-rank = 1-rank rely on it"),
      key_of("run.cudnn_algorithms", &RunConfig::cudnn_algorithms,
             "cuda: how the cuDNN convolution and cuBLASLt GEMM algorithms are chosen: auto (rank 0 times every "
             "candidate run.deterministic allows at start-up and every rank runs the fastest; a resumed run keeps its "
             "checkpoint's), heuristic (the libraries' untimed first choice), or a run's run.json (its choices, "
             "pinned)"),
      workspace_key("run.cudnn_workspace_mb",
                    "cuda: the most scratch memory (MiB) one operator's cuDNN or cuBLASLt algorithm may use; auto: "
                    "what is free after the model, its activations and the data are allocated, less a tenth of the "
                    "device (at least 1 GiB)"),
      key_of("run.cpu_onednn_only", &RunConfig::cpu_onednn_only,
             "cpu operators: oneDNN primitives only, no sgemm inner products, direct first-layer convolutions, fused "
             "separable convolutions or direct max pooling (comparisons)"),
      bf16_gemm_key("run.cpu_bf16_gemm",
                    "cpu, train.precision bf16: dense and 1x1 convolution GEMMs on oneDNN's bf16 kernels (bf16), as "
                    "f32 GEMMs on widened bf16 operands (f32), auto: rank 0 times both at the model's shapes at "
                    "start-up and every rank takes the faster (a resumed run: its checkpoint's choice), or a run's "
                    "run.json (its choice, pinned)"),
      key_of("run.sim_memory_mb", &RunConfig::sim_memory_mb, "sim device memory in MiB (0: unlimited)"),
      key_of("run.watchdog_s", &RunConfig::watchdog_s,
             "a rank in one phase of one step longer than this many seconds ends the job with MPI_Abort (0: off)"),
      key_of("run.watchdog_long_s", &RunConfig::watchdog_long_s,
             "the watchdog's allowance for the start-up and first step, evaluations and checkpoint writes"),
      key_of("run.checkpoint_steps", &RunConfig::checkpoint_steps,
             "write a checkpoint to run.dir/checkpoints every N steps (0: off)"),
      key_of("run.checkpoint_seconds", &RunConfig::checkpoint_seconds,
             "write a checkpoint every S seconds of rank 0's clock (0: off)"),
      key_of("run.checkpoint_at_end", &RunConfig::checkpoint_at_end,
             "write a checkpoint when the run ends (needs run.dir)"),
      key_of("run.checkpoint_keep", &RunConfig::checkpoint_keep, "checkpoints kept (the newest)"),
      key_of("run.resume", &RunConfig::resume,
             "auto: continue from run.dir's latest checkpoint (fresh when none); or a checkpoint or run directory"),
      key_of("run.resume_force", &RunConfig::resume_force,
             "resume although forceable identity keys differ from the checkpoint's"),
      key_of("run.init_from", &RunConfig::init_from,
             "start from the parameters and buffers of a model.h5 (a checkpoint's, or st-import-torch's from a PyTorch "
             "state_dict), a checkpoint or a run directory, with a fresh optimizer and schedule; a classifier of "
             "another class count is re-initialized (empty: none; a run that resumes continues from its own "
             "checkpoint)"),
      key_of("run.evaluate_only", &RunConfig::evaluate_only,
             "evaluate a model.h5, checkpoint or run directory on train.eval_split across all ranks and exit: top-1, "
             "top-5, loss, per-class accuracy and the confusion matrix in run.dir/eval.json and one line (empty: "
             "train)"),
      key_of("testing.sim_delay_us", &RunConfig::sim_delay_us,
             "sim: random delay of up to this many microseconds before every op on every stream"),
      key_of("testing.sim_ignore_events", &RunConfig::sim_ignore_events,
             "sim, events whose label contains this never make anyone wait (shows a test catches it)"),
      key_of("testing.inject_overflow_rank", &RunConfig::inject_overflow_rank,
             "this rank reports inf/NaN gradients at testing.inject_overflow_step (-1: off)"),
      key_of("testing.inject_overflow_step", &RunConfig::inject_overflow_step,
             "the step at which testing.inject_overflow_rank reports inf/NaN gradients"),
      key_of("testing.inject_inf_loss_rank", &RunConfig::inject_inf_loss_rank,
             "this rank sets its first logit to inf at testing.inject_inf_loss_step, on the device, so that its "
             "loss and the gradients turn inf/NaN (-1: off)"),
      key_of("testing.inject_inf_loss_step", &RunConfig::inject_inf_loss_step,
             "the step at which testing.inject_inf_loss_rank's logits turn inf"),
      key_of("testing.extra_host_syncs", &RunConfig::extra_host_syncs,
             "this many extra compute-stream synchronizations in every training step's forward (device counters)"),
      key_of("testing.extra_launches", &RunConfig::extra_launches,
             "this many extra one-element kernel launches in every training step's forward (device counters)"),
      key_of(
          "testing.inject_signal", &RunConfig::inject_signal,
          "testing.inject_signal_rank sends itself this signal (USR1, TERM or INT) before testing.inject_signal_step"),
      key_of("testing.inject_signal_rank", &RunConfig::inject_signal_rank, "see testing.inject_signal (-1: off)"),
      key_of("testing.inject_signal_step", &RunConfig::inject_signal_step, "see testing.inject_signal"),
      key_of("testing.inject_signal_micro", &RunConfig::inject_signal_micro,
             "with train.accumulate_steps: the signal is sent before this micro-batch of the step"),
      key_of("testing.inject_checkpoint_crash_step", &RunConfig::inject_checkpoint_crash_step,
             "exit while writing the checkpoint of this step, between two files (-1: off)"),
      key_of("testing.inject_divergence_rank", &RunConfig::inject_divergence_rank,
             "this rank perturbs one weight before the first checkpoint (-1: off)"),
      key_of("testing.inject_stage_hang_rank", &RunConfig::inject_stage_hang_rank,
             "this rank blocks forever while staging, before the exchange between nodes (-1: off)"),
  };
  return keys;
}

Shape parse_model_input(const std::string& text) {
  const std::vector<std::string> items = config_list_items(text);
  Shape shape;
  for (const std::string& item : items) {
    size_t used = 0;
    long long d = 0;
    try {
      d = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    ST_USER_CHECK(used == item.size() && d > 0,
                  "model.input expects H,W,C (three positive integers, as 224,224,3), got '", text, "'");
    shape.push_back(d);
  }
  ST_USER_CHECK(shape.empty() || shape.size() == 3,
                "model.input expects H,W,C (three positive integers, as 224,224,3), got '", text, "'");
  return shape;
}

std::vector<std::string> config_list_items(const std::string& text) {
  const auto trim = [](const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  std::string body = trim(text);
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']') body = body.substr(1, body.size() - 2);
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string::npos) comma = body.size();
    std::string item = trim(body.substr(start, comma - start));
    if (item.size() >= 2 && (item.front() == '"' || item.front() == '\'') && item.back() == item.front())
      item = item.substr(1, item.size() - 2);
    if (!item.empty()) items.push_back(item);
    start = comma + 1;
  }
  return items;
}

const ConfigKey* find_config_key(const std::string& key) {
  for (const auto& k : config_keys())
    if (k.key == key) return &k;
  return nullptr;
}

std::string nearest_config_key(const std::string& key) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& k : config_keys()) {
    // Compare against the whole key and against its last part, so "batch" finds "train.batch".
    const std::string tail = k.key.substr(k.key.find('.') + 1);
    const size_t d = std::min(edit_distance(key, k.key), edit_distance(key, tail) + 1);
    if (d < best_d) {
      best_d = d;
      best = k.key;
    }
  }
  return best;
}

void set_config_value(RunConfig& cfg, const std::string& key, const std::string& value, const std::string& origin) {
  const ConfigKey* k = find_config_key(key);
  ST_USER_CHECK(k != nullptr, origin, ": unknown configuration key '", key, "' (did you mean '", nearest_config_key(key),
           "'? --help lists every key)");
  try {
    k->set(cfg, value);
  } catch (const Error& e) {
    ST_USER_FAIL(origin, ": ", e.message());
  }
}

void apply_toml_string(RunConfig& cfg, const std::string& text, const std::string& origin) {
  toml::table t;
  try {
    t = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    ST_USER_FAIL(origin, ":", e.source().begin.line, ":", e.source().begin.column, ": TOML syntax error: ", e.description());
  }
  walk(cfg, t, "", origin);
}

void apply_toml_file(RunConfig& cfg, const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    ST_USER_FAIL(path, ":", e.source().begin.line, ":", e.source().begin.column, ": ", e.description());
  }
  walk(cfg, t, "", path);
}

void validate_config(const RunConfig& c) {
  ST_USER_CHECK(c.model_classes == 0 || c.model_classes >= 2,
                "model.classes must be at least 2 (0: the data set's), got ", c.model_classes);
  ST_USER_CHECK(c.batch > 0, "train.batch must be positive, got ", c.batch);
  ST_USER_CHECK(c.epochs > 0, "train.epochs must be positive, got ", c.epochs);
  ST_USER_CHECK(c.accumulate_steps >= 1, "train.accumulate_steps must be >= 1, got ", c.accumulate_steps);
  ST_USER_CHECK(c.inject_signal_micro >= 0 && c.inject_signal_micro < c.accumulate_steps,
                "testing.inject_signal_micro must be in [0, train.accumulate_steps), got ", c.inject_signal_micro);
  ST_USER_CHECK(c.log_every > 0, "train.log_every must be positive, got ", c.log_every);
  ST_USER_CHECK(c.max_steps >= 0, "train.max_steps must be >= 0, got ", c.max_steps);
  ST_USER_CHECK(c.prefetch >= 1, "data.prefetch must be >= 1, got ", c.prefetch);
  ST_USER_CHECK(c.synthetic_samples > 0, "data.synthetic_samples must be positive, got ", c.synthetic_samples);
  ST_USER_CHECK(c.lr > 0, "optimizer.lr must be positive, got ", c.lr);
  ST_USER_CHECK(c.schedule != optim::LrScheduleKind::step || c.step_epochs > 0,
           "optimizer.schedule = step needs optimizer.step_epochs > 0");
  ST_USER_CHECK(c.reference_batch > 0, "optimizer.reference_batch must be positive");
  ST_USER_CHECK(c.bucket_mb.automatic || c.bucket_mb.fixed_mb > 0, "comm.bucket_mb must be auto or positive, got ",
           c.bucket_mb.fixed_mb);
  (void)comm::resolve_comm_backend(c.comm_backend, c.device);  // throws for nccl on cpu
  ST_USER_CHECK(c.threads >= 0, "run.threads must be >= 0");
  ST_USER_CHECK(c.cudnn_workspace_mb >= 0 || c.cudnn_workspace_mb == RunConfig::kAutoWorkspace,
                "run.cudnn_workspace_mb must be auto or >= 0, got ", c.cudnn_workspace_mb);
  ST_USER_CHECK(!c.cudnn_algorithms.empty(), "run.cudnn_algorithms is empty: auto, heuristic, or a run's run.json");
  ST_USER_CHECK(c.sim_memory_mb >= 0, "run.sim_memory_mb must be >= 0, got ", c.sim_memory_mb);
  ST_USER_CHECK(c.sim_delay_us >= 0, "testing.sim_delay_us must be >= 0, got ", c.sim_delay_us);
  ST_USER_CHECK(c.extra_host_syncs >= 0 && c.extra_launches >= 0,
                "testing.extra_host_syncs and testing.extra_launches must be >= 0");
  (void)parse_profile_request(c.profile);
  ST_USER_CHECK(!c.timeline || !c.run_dir.empty(), "run.timeline = true needs run.dir");
  ST_USER_CHECK(c.target_accuracy >= 0 && c.target_accuracy <= 1, "train.target_accuracy must be in [0, 1] (0: none), got ",
           c.target_accuracy);
  ST_USER_CHECK(c.target_accuracy == 0 || c.evaluate, "train.target_accuracy needs train.evaluate = true");
  ST_USER_CHECK(c.submission_division.empty() || c.submission_division == "closed" || c.submission_division == "open",
                "run.mllog_submission.division must be closed or open (MLPerf's divisions), got '",
                c.submission_division, "'");
  ST_USER_CHECK(c.submission_status.empty() || c.submission_status == "cloud" || c.submission_status == "onprem" ||
                    c.submission_status == "preview" || c.submission_status == "research",
                "run.mllog_submission.status must be cloud, onprem, preview or research (MLPerf's categories), got '",
                c.submission_status, "'");
  ST_USER_CHECK(!c.clear_cache || c.data_path != "synthetic",
                "run.clear_cache drops the data file from the page cache, but data.path = synthetic has none until "
                "the run writes it: set data.path to a packed file, or run.clear_cache = false");
  ST_USER_CHECK(c.watchdog_s >= 0, "run.watchdog_s must be >= 0 (0: off), got ", c.watchdog_s);
  ST_USER_CHECK(c.watchdog_long_s >= c.watchdog_s, "run.watchdog_long_s must be >= run.watchdog_s (", c.watchdog_s,
           "), got ", c.watchdog_long_s);
  ST_USER_CHECK(c.inject_signal.empty() || c.inject_signal == "USR1" || c.inject_signal == "TERM" ||
                    c.inject_signal == "INT",
                "testing.inject_signal must be USR1, TERM, INT or empty, got '", c.inject_signal, "'");
  ST_USER_CHECK(c.node_ranks >= 0, "data.node_ranks must be >= 0 (0: one node per machine), got ", c.node_ranks);
  ST_USER_CHECK(c.stage_memory_gb >= 0, "data.stage_memory_gb must be >= 0 (0: measured), got ", c.stage_memory_gb);
  ST_USER_CHECK(c.shuffle == "global" || c.shuffle == "node", "data.shuffle must be global or node, got '", c.shuffle,
                "'");
  ST_USER_CHECK(c.shuffle != "node" || !c.stage_dir.empty(),
                "data.shuffle = node stages each node's share in data.stage_dir: set data.stage_dir to a node-local "
                "directory (NVMe or tmpfs)");
  ST_USER_CHECK(c.stage_dir.empty() || c.shuffle == "node",
                "data.stage_dir holds each node's share, shuffled within the node: set data.shuffle = node with it");
  const bool node_copy = c.data_mode == data::LoaderMode::stage && c.stage_copy == data::StageCopy::node;
  ST_USER_CHECK(c.shuffle != "node" || node_copy, "data.shuffle = node needs data.mode = stage and data.stage_copy = node");
  ST_USER_CHECK(c.normalize == "file" || c.normalize == "none", "data.normalize must be file or none, got '",
                c.normalize, "'");
  ST_USER_CHECK(c.checkpoint_steps >= 0, "run.checkpoint_steps must be >= 0, got ", c.checkpoint_steps);
  ST_USER_CHECK(c.checkpoint_seconds >= 0, "run.checkpoint_seconds must be >= 0, got ", c.checkpoint_seconds);
  ST_USER_CHECK(c.checkpoint_keep >= 1, "run.checkpoint_keep must be >= 1, got ", c.checkpoint_keep);
  ST_USER_CHECK((c.checkpoint_steps == 0 && c.checkpoint_seconds == 0) || !c.run_dir.empty(),
           "run.checkpoint_steps and run.checkpoint_seconds write to run.dir/checkpoints: set run.dir");
  ST_USER_CHECK(c.evaluate_only.empty() || c.evaluate,
                "run.evaluate_only evaluates on train.eval_split: set train.evaluate = true");
  ST_USER_CHECK(c.evaluate_only.empty() || (c.resume.empty() && c.init_from.empty()),
                "run.evaluate_only evaluates the file it names: unset run.resume and run.init_from");
  ST_USER_CHECK(c.resume != "auto" || !c.run_dir.empty(),
           "run.resume = auto continues from run.dir/checkpoints/latest, but run.dir is not set: set run.dir, or "
           "name a checkpoint directory");
}

BackendOptions backend_options(const RunConfig& c) {
  BackendOptions o;
  o.kind = c.device;
  o.threads = static_cast<int>(c.threads);
  o.onednn_only = c.cpu_onednn_only;
  o.bf16_gemm = c.cpu_bf16_gemm;
  o.sim_memory_bytes = c.sim_memory_mb << 20;
  o.sim_max_delay_us = c.sim_delay_us;
  o.sim_delay_seed = c.seed;
  o.sim_ignore_events = c.sim_ignore_events;
  o.deterministic = c.deterministic;
  o.allow_tf32 = c.allow_tf32;
  o.workspace_auto = c.cudnn_workspace_mb == RunConfig::kAutoWorkspace;
  o.workspace_limit_bytes = o.workspace_auto ? 0 : c.cudnn_workspace_mb << 20;
  o.time_algorithms = false;  // the trainer times on rank 0 (train/algorithm_choice.hpp)
  return o;
}

bool is_testing_key(const ConfigKey& k) { return k.key.rfind("testing.", 0) == 0; }

bool is_left_out(const ConfigKey& k, const RunConfig& cfg) { return is_testing_key(k) && has_default_value(k, cfg); }

std::vector<std::string> config_differences(const RunConfig& cfg) {
  std::vector<std::string> out;
  for (const auto& k : config_keys())
    if (!has_default_value(k, cfg)) out.push_back(k.key + " = " + k.get(cfg));
  return out;
}

std::string config_to_toml(const RunConfig& cfg) {
  std::ostringstream os;
  std::string section;
  for (const auto& k : config_keys()) {
    if (is_left_out(k, cfg)) continue;
    const std::string sec = k.key.substr(0, k.key.find('.'));
    if (sec != section) {
      os << (section.empty() ? "" : "\n") << "[" << sec << "]\n";
      section = sec;
    }
    os << k.key.substr(sec.size() + 1) << " = " << k.get(cfg) << "\n";
  }
  return os.str();
}

uint64_t config_hash(const RunConfig& cfg) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : config_to_toml(cfg)) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace scaletrain::train
