// RunConfig: every setting of a training run, with its default and help text in one registry.
// Values come from a TOML file (sections map to "section.key") and then from command-line
// overrides (--section.key value); unknown keys are rejected with the nearest valid name. Mode keys
// are parsed into their modules' enums here, once: the defaults below are the only defaults.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/bucket_size_choice.hpp"
#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/comm/gradient_transport.hpp"
#include "scaletrain/core/precision.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/optim/lr_schedule.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/train/nonfinite_guard.hpp"

namespace scaletrain::train {

struct RunConfig {
  // [model]
  std::string model = "lenet";
  // The per-sample input [H, W, C] and the class count the model is built for; empty and 0: the data
  // set's. Where set they must agree with the data set; with both set, --summary needs none.
  Shape model_input;
  int64_t model_classes = 0;
  // SyncBatchNorm: BatchNorm takes its statistics over the global batch (sums over the ranks).
  bool sync_bn = false;
  // The hidden classifier layers' width (vgg16; 0: the network's own) and the classifier's dropout
  // rate (mobilenet_v2, vgg16, inception_v3; negative: the network's own).
  int64_t classifier_width = 0;
  double dropout = -1.0;
  int64_t stem_stride = 0;  // mobilenet_v2's stem stride (0: the network's own, 2)
  // model.vit.*: torchvision's VisionTransformer arguments for model.name = vit (0: vit_tiny's); image_size,
  // set, must be the input's size (any ViT).
  int64_t vit_image_size = 0, vit_patch_size = 0, vit_num_layers = 0, vit_num_heads = 0, vit_hidden_dim = 0,
          vit_mlp_dim = 0;
  // [data]
  std::string data_path = "synthetic";  // an HDF5 dataset, or "synthetic"
  data::LoaderMode data_mode = data::LoaderMode::stage;
  // Stage mode: one copy per node in MPI shared memory ("node") or one per rank ("rank"); every K
  // ranks of a machine as one node (0: the machine); the node's budget (0: 3/4 of MemAvailable);
  // a node-local directory for each node's share, shuffled within the node (shuffle "node").
  data::StageCopy stage_copy = data::StageCopy::node;
  int64_t node_ranks = 0;
  double stage_memory_gb = 0;
  std::string stage_dir;
  std::string shuffle = "global";
  int64_t synthetic_samples = 8192;
  int64_t prefetch = 4;
  bool augment = false;
  int64_t augment_pad = 2;
  bool augment_flip = true;
  bool drop_remainder = true;
  // "file": samples are normalized per channel by the file's train-split mean/std (a file without
  // them is refused); "none": the raw values, on purpose.
  std::string normalize = "file";
  // [train]
  int64_t epochs = 2;
  int64_t batch = 128;  // global batch per update: per-rank micro-batch x ranks x accumulate_steps
  // Micro-batches per update: their gradients are summed, then all-reduced once (train.batch must
  // divide by ranks x accumulate_steps).
  int64_t accumulate_steps = 1;
  uint64_t seed = 42;
  int64_t log_every = 50;
  int64_t max_steps = 0;         // stop after this many steps in total (0: no limit)
  int64_t warmup_log_steps = 5;  // steps excluded from throughput averages
  bool evaluate = true;
  std::string eval_split = "test";
  // Time to accuracy, as MLPerf HPC compares systems: run.json's time_to_accuracy_s is the time from
  // run_start to the first evaluation at or above this accuracy (0: no target); with stop_at_target
  // the run ends there.
  double target_accuracy = 0;
  bool stop_at_target = true;
  // Compute type of layers (fp32 accumulation; master weights, optimizer state, loss in fp32).
  Precision precision = Precision::fp32;
  bool allow_tf32 = false;  // fp32 on cuda: TF32 tensor cores in convolutions and GEMMs
  // fp32 and bf16: a step with an inf/NaN loss or gradient stops the run (stop) or is skipped and
  // counted (skip). fp16's loss scaler skips such steps itself.
  NonFinitePolicy on_nonfinite = NonFinitePolicy::stop;
  // [optimizer]
  optim::OptimizerKind optimizer = optim::OptimizerKind::sgd;
  double lr = 0.05;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  // Tensors excluded from weight decay: biases, normalization layers' parameters (none: all decay).
  std::vector<optim::NoDecayCategory> no_decay;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // LARS' trust coefficient (eta); LARS and LAMB: biases and normalization parameters take neither
  // the trust ratio nor weight decay (MLPerf's ResNet-50 reference).
  double trust_coefficient = 0.001;
  bool exclude_bias_norm = true;
  optim::LrScheduleKind schedule = optim::LrScheduleKind::constant;
  double warmup_epochs = 0.0;
  int64_t step_epochs = 0;
  double gamma = 0.1;
  double min_lr = 0.0;
  double poly_power = 2.0;  // poly schedule: (1 - t / T)^power
  bool scale_lr = false;  // linear scaling rule: lr * batch / reference_batch
  int64_t reference_batch = 128;
  // Dynamic loss scaling (fp16 only), torch.cuda.amp.GradScaler's defaults.
  double loss_scale_init = 65536.0;
  double loss_scale_growth = 2.0;
  double loss_scale_backoff = 0.5;
  int64_t loss_scale_interval = 2000;
  // [comm]
  // Gradient bucket size: auto (probe the all-reduce at start-up, time backward in the first steps,
  // pick the size with the least predicted exposed time; train/bucket_tuner.hpp) or a fixed size in MB.
  comm::BucketSizeSetting bucket_mb;
  // test: MPI_Test polls between backward layers; thread: a communication thread. test is the default:
  // on CPU ranks the polls hide the all-reduce at least as well, and the thread competes with compute
  // for the rank's core (perf/bench_rank_scaling.py shows the exposed all-reduce share).
  comm::CommProgress progress = comm::CommProgress::test;
  // Type of the gradients on the wire: bf16 and fp16 halve the all-reduce bytes.
  Precision comm_dtype = Precision::fp32;
  // What carries the gradients: auto is nccl on run.device = cuda, mpi elsewhere (comm/gradient_transport.hpp).
  comm::CommBackend comm_backend = comm::CommBackend::auto_;
  // [run]
  std::string run_dir = "";  // empty: no files written
  // A run.dir holding another run's files is refused unless run.resume continues it or this moves
  // them aside to <run.dir>.<time> (train/run_dir_guard.hpp).
  bool overwrite = false;
  bool timeline = false;     // write <run_dir>/timeline.json (Chrome trace)
  std::string profile = "none";  // run.profile: none, layers, kernels or layers,kernels (train/layer_profile.hpp)
  bool mllog = false;        // rank 0 writes MLPerf-style :::MLLOG lines (stdout, <run_dir>/mllog.log)
  // run.mllog_submission: the submission's metadata, logged as submission_org, _platform, _division,
  // _status and _benchmark. Empty: not logged, except the platform, which then describes the nodes.
  std::string submission_org;
  std::string submission_platform;
  std::string submission_division;  // closed or open
  std::string submission_status;    // cloud, onprem, preview or research
  std::string submission_benchmark;
  // Before staging, the lowest rank of each host drops the data file from the page cache
  // (train/cache_clear.hpp); MLLOG's cache_clear says whether it was.
  bool clear_cache = false;
  int64_t threads = 0;       // compute threads per rank; 0: the cores this rank is bound to
  DeviceKind device = DeviceKind::automatic;  // auto: cuda where the build has it and a GPU is visible
  // cuda operator selection (BackendOptions, train/algorithm_choice.hpp): deterministic algorithms
  // only; how they are chosen ("auto": timed on rank 0, "heuristic", or a run.json to pin to); the
  // workspace one operator's algorithm may use (kAutoWorkspace: free memory less a margin).
  bool deterministic = true;
  std::string cudnn_algorithms = "auto";
  static constexpr int64_t kAutoWorkspace = -1;
  int64_t cudnn_workspace_mb = kAutoWorkspace;
  bool cpu_onednn_only = false;  // oneDNN primitives for every cpu operator (no sgemm/direct paths)
  Bf16GemmCompute cpu_bf16_gemm = Bf16GemmCompute::automatic;  // cpu bf16 dense/1x1 GEMMs: auto, bf16, f32
  std::string cpu_bf16_gemm_pin;  // run.cpu_bf16_gemm = FILE: another run's run.json to take the choice of
  int64_t sim_memory_mb = 0;     // sim device capacity (0: unlimited)
  // Hang watchdog (train/watchdog.hpp): a rank in one phase of one step longer than watchdog_s ends
  // the job with MPI_Abort; the start-up and first step, evaluations and checkpoint writes get
  // watchdog_long_s. 0: off.
  double watchdog_s = 300;
  double watchdog_long_s = 1800;
  // Checkpoints in run.dir/checkpoints (train/checkpoint_store.hpp): every N steps, every S seconds
  // (rank 0's clock decides for all), and at the end of the run; the newest `keep` are kept.
  int64_t checkpoint_steps = 0;
  double checkpoint_seconds = 0;
  bool checkpoint_at_end = true;
  int64_t checkpoint_keep = 3;
  // "" (start fresh), "auto" (run.dir's latest checkpoint, or fresh when there is none) or a path.
  std::string resume;
  bool resume_force = false;  // resume although forceable identity keys differ (train/resume.hpp)
  // A model.h5, checkpoint or run directory whose parameters and buffers a fresh run starts from (new
  // optimizer state and schedule; a classifier of another class count re-initialized). A run that
  // resumes continues from its own checkpoint instead (train/model_weights.hpp).
  std::string init_from;
  // Evaluate this model.h5, checkpoint or run directory on train.eval_split and exit (no training):
  // run.dir/eval.json and one line (train/split_evaluation.hpp).
  std::string evaluate_only;
  // [testing]: keys that exist for the tests (hidden from --help, left out of run.json and
  // config.toml at their defaults; never identity keys).
  int64_t sim_delay_us = 0;      // sim: random delay of up to this before every op on every stream
  std::string sim_ignore_events;  // sim: events whose label contains this never wait
  // This rank's local inf/NaN-gradient flag is set at this step (-1: off), to show that every rank
  // skips (or stops at) the step together.
  int64_t inject_overflow_rank = -1;
  int64_t inject_overflow_step = -1;
  int64_t inject_inf_loss_rank = -1;  // this rank's logits (so its loss and every gradient) turn inf/NaN
  int64_t inject_inf_loss_step = -1;  // at this step, on the device
  int64_t extra_host_syncs = 0;  // per training step, in forward: the device counters' tests
  int64_t extra_launches = 0;
  // This rank sends itself SIGUSR1, SIGTERM or SIGINT ("USR1", "TERM", "INT"; "": off) before this step.
  std::string inject_signal;
  int64_t inject_signal_rank = -1;
  int64_t inject_signal_step = -1;
  int64_t inject_signal_micro = 0;  // with train.accumulate_steps: before this micro-batch of the step
  // The checkpoint of this step exits the process after its first file (-1: off), and this rank
  // perturbs one weight before the first checkpoint (-1: off).
  int64_t inject_checkpoint_crash_step = -1;
  int64_t inject_divergence_rank = -1;
  // This rank blocks forever while staging, before the exchange (-1: off): the watchdog's case.
  int64_t inject_stage_hang_rank = -1;
};

// The backend a run asks for.
BackendOptions backend_options(const RunConfig& cfg);

struct ConfigKey {
  std::string key;   // "train.batch"; the testing section's keys start with "testing."
  // "int", "float", "bool", "string", "auto|float" (get: "\"auto\"" or a number), "list" (get: a TOML
  // array of strings, ["bias", "norm"]; set: that, or the items separated by commas)
  std::string type;
  std::string help;
  std::function<std::string(const RunConfig&)> get;
  std::function<void(RunConfig&, const std::string&)> set;  // parses; throws Error naming the key
};

const std::vector<ConfigKey>& config_keys();
const ConfigKey* find_config_key(const std::string& key);
// The closest registered key by edit distance ("did you mean ...").
std::string nearest_config_key(const std::string& key);

// model.input's text, "H,W,C" (three positive integers; blanks allowed), as a shape; "": empty.
// An Error naming the key for anything else.
Shape parse_model_input(const std::string& text);

// The items of a list key's text: a TOML array of strings (["a", "b"]) or a comma list (a,b);
// "", "[]": none. Surrounding blanks and quotes are dropped.
std::vector<std::string> config_list_items(const std::string& text);

// Applies a TOML file; `origin` names it in errors.
void apply_toml_file(RunConfig& cfg, const std::string& path);
void apply_toml_string(RunConfig& cfg, const std::string& text, const std::string& origin);
// Sets one key from text; unknown keys and bad values throw Error.
void set_config_value(RunConfig& cfg, const std::string& key, const std::string& value, const std::string& origin);
// Cross-key checks (positive batch, known optimizer, ...) that do not need the world size.
void validate_config(const RunConfig& cfg);

// Whether a key belongs to the tests' section (hidden from --help).
bool is_testing_key(const ConfigKey& k);
// Whether --print-config, config.toml and run.json leave the key out: a testing key at its default.
bool is_left_out(const ConfigKey& k, const RunConfig& cfg);
// "section.key = value" for every key whose value differs from its default, in registry order.
std::vector<std::string> config_differences(const RunConfig& cfg);

// The resolved configuration as TOML text (what --print-config prints and run.dir/config.toml
// holds; testing keys only where set), and its 64-bit hash.
std::string config_to_toml(const RunConfig& cfg);
uint64_t config_hash(const RunConfig& cfg);

}  // namespace scaletrain::train
