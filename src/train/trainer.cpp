// Trainer: start-up (backend, gradient transport, data, model, identical weights, optimizer,
// buckets, a resumed checkpoint), the step that never waits for the device (the inf/NaN verdict,
// the skip, the loss scale and the learning rate live on the device; the host reads them a step or
// more later) with the host's agreement across ranks (stop signal, a read-back inf/NaN stop,
// checkpoint time) started as it starts and completed as it ends, the epoch loop with its intervals and checkpoints, and distributed
// evaluation. Every piece of device work goes through the backend's streams; loss and accuracy
// sums stay on the device until an interval ends. Interval and epoch figures are the
// IntervalReducer's; what comes from the configuration alone is training_setup's. The watchdog
// follows every phase; GPU telemetry (NVML) is sampled once per interval.
#include "scaletrain/train/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <numeric>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include "scaletrain/backend/algorithm_tuning.hpp"
#include "scaletrain/backend/bf16_gemm_tuning.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/comm/gradient_transport.hpp"
#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/input_pipeline.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/kernels/merge.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/core/join.hpp"
#include "scaletrain/optim/loss_scaler.hpp"
#include "scaletrain/optim/lr_schedule.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/train/bucket_tuner.hpp"
#include "scaletrain/train/device_setup.hpp"
#include "scaletrain/train/device_step_state.hpp"
#include "scaletrain/train/device_step_counts.hpp"
#include "scaletrain/train/errors.hpp"
#include "scaletrain/train/gpu_telemetry.hpp"
#include "scaletrain/train/interval_reducer.hpp"
#include "scaletrain/train/json_file.hpp"
#include "scaletrain/train/layer_profile.hpp"
#include "scaletrain/train/model_buffers.hpp"
#include "scaletrain/train/model_weights.hpp"
#include "scaletrain/train/model_shape.hpp"
#include "scaletrain/train/nonfinite_guard.hpp"
#include "scaletrain/train/phase_clock.hpp"
#include "scaletrain/train/progress.hpp"
#include "scaletrain/train/rank0_choice.hpp"
#include "scaletrain/train/step_agreement.hpp"
#include "scaletrain/train/stop_signals.hpp"
#include "scaletrain/train/synthetic_data.hpp"
#include "scaletrain/train/timeline.hpp"
#include "scaletrain/train/training_setup.hpp"
#include "scaletrain/train/watchdog.hpp"

namespace scaletrain::train {

struct Trainer::Impl {
  RunConfig cfg;
  comm::Communicator& comm;
  std::unique_ptr<Backend> backend;
  // comm.backend = nccl: the device communicator that carries the gradients (NCCL, or its
  // simulation on sim); null when `comm` (MPI) carries them. Destroyed before the backend.
  std::unique_ptr<comm::Communicator> grad_comm;
  // The communicator the gradients travel on: the device one (NCCL) where there is one, else MPI.
  comm::Communicator& gradient_comm() { return grad_comm ? *grad_comm : comm; }
  // What the watchdog aborts: the gradient communicator once there is one (NCCL aborts first).
  std::atomic<comm::Communicator*> abort_comm;
  std::string data_path;
  std::unique_ptr<data::DataLoader> train_loader, eval_loader;
  std::unique_ptr<nn::Model> model;
  std::unique_ptr<CommunicatorStatisticsReducer> statistics_reducer;  // model.sync_bn
  std::optional<Bf16GemmChoice> bf16_gemm;  // run.cpu_bf16_gemm where the backend has the choice
  std::optional<AlgorithmChoice> algorithms;  // run.cudnn_algorithms where the backend has the choice
  nn::SoftmaxCrossEntropy loss;
  // One per auxiliary output (inception_v3's): its loss joins the objective with its weight; the logged
  // training loss and accuracy are the model output's.
  std::vector<nn::SoftmaxCrossEntropy> auxiliary_losses;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LrSchedule> schedule;
  std::unique_ptr<comm::GradientBuckets> buckets;
  std::unique_ptr<BucketTuner> bucket_tuner;  // comm.bucket_mb (auto: probe, timed backward, choice)
  double retired_allreduce_seconds = 0;       // of buckets replaced by the choice, not yet reported
  std::unique_ptr<optim::LossScaler> scaler;  // the host's view of the device's, brought up to date by pull
  std::unique_ptr<DeviceStepState> step_state;  // the verdict, skip, loss scale and lr on the device
  std::unique_ptr<HostAgreement> agreement;     // this step's host flags across ranks
  std::optional<StepOutcome> nonfinite_stop;    // the first step read back as inf/NaN that stops the run
  int64_t local_batch = 0;  // this rank's micro-batch
  int64_t accumulate = 1;   // train.accumulate_steps: micro-batches per update
  Tensor accumulated;       // accumulate > 1: the update's earlier micro-batches' gradient sum (f32)
  // Updates per epoch: the loader's micro-batch steps, K to an update (a last incomplete round is left out).
  int64_t updates_per_epoch() const { return train_loader->steps_per_epoch() / accumulate; }
  std::unique_ptr<data::InputPipeline> input;  // the loader's batch to the model's input
  Tensor interval_sums, eval_sums;  // f64 [3] on the device: loss, correct, rows
  std::function<void(const IntervalTimings&)> interval_hook;
  std::function<void(const CheckpointRecord&)> checkpoint_hook;
  EpochHooks epoch_hooks;
  TimeSpan staging;
  std::vector<StagingSummary> staging_summaries;  // stage mode: train, then the evaluation split
  std::unique_ptr<Timeline> timeline;
  PhaseTimers timers;
  std::unique_ptr<PhaseClock> clock;
  std::unique_ptr<Checkpointer> checkpointer;
  std::optional<ResumeRecord> resumed;
  TrainingPosition position;  // steps done; where the next step is
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<GpuTelemetry> telemetry;  // this rank's GPU through NVML, sampled once per interval
  std::string telemetry_line;               // rank 0's start-up line about it ("" on cpu and sim)
  int64_t first_step = -1;                  // of this run (the watchdog's long allowance)
  StepFlags stop;                           // the agreed stop signal, once one has arrived
  std::unique_ptr<DeviceStepCounts> device_counts;  // run.json's device_per_step
  bool device_line_printed = false;
  std::unique_ptr<LayerProfile> profile;  // run.profile; null when none
  Tensor testing_scratch;                 // testing.extra_launches' one element

  Impl(RunConfig c, comm::Communicator& cm) : cfg(std::move(c)), comm(cm), abort_comm(&cm) {
    cfg.device = resolve_device_kind(cfg.device).kind;  // the app resolves auto first; library users get the same
    // An evaluation sends no gradients: buckets of a fixed size, without comm.bucket_mb = auto's all-reduce probe.
    if (!cfg.evaluate_only.empty()) cfg.bucket_mb = comm::BucketSizeSetting::fixed(25.0);
  }

  void setup();
  void setup_device();
  void setup_data();
  void summarize_staging(const data::DataLoader& loader);
  void check_eval_split();
  void setup_model();
  void build_model();
  void choose_bf16_gemm();
  AlgorithmTuning* every_rank_algorithm_tuning();
  void pin_algorithms();
  void time_algorithms();
  void setup_optimizer();
  data::InputOptions input_options(const data::DatasetInfo& info, DType compute) const;
  void setup_input();
  void setup_checkpoints();
  void initialize_from(const std::string& path);
  int64_t classes() const { return static_cast<int64_t>(train_loader->info().classes.size()); }
  TrainingState state() { return TrainingState{*backend, *model, *optimizer, *scaler}; }
  StepFlags train_step(const data::Batch& b, int64_t step);
  void forward_micro_batch(const data::Batch& b, int64_t step, bool last);
  const Tensor& loss_gradient(nn::SoftmaxCrossEntropy& l, float weight, std::vector<const Tensor*>* auxiliary);
  void backward_micro_batch(int64_t micro);
  const data::Batch* next_micro_batch(const data::Batch* b, data::NonFiniteScan& scan, int64_t step, int64_t micro);
  void wait_for_gradients();
  void start_agreement(const data::NonFiniteScan& input_scan);
  StepFlags finish_agreement();
  void judge_step();
  void apply_update(int64_t step);
  void read_outcomes(bool drain);
  void drain_step_state();
  [[noreturn]] void stop_at_nonfinite_input(int32_t mark, data::NonFiniteScan scan, int64_t step);
  [[noreturn]] void stop_at_nonfinite(const StepOutcome& o);
  void inject_signal(int64_t step, int64_t micro = 0);
  int64_t run_epoch(int64_t epoch, int64_t planned, IntervalReducer& reducer, ProgressPrinter& progress);
  void finish_interval(int64_t epoch, IntervalReducer& reducer, ProgressPrinter& progress);
  void checkpoint();
  void setup_profile();
  void testing_extras();
  void begin_counted_step();
  void print_device_line();
  void finish_profile(TrainResult& result);
  // The profile's row for a phase outside the layers ("input", "optimizer").
  static std::string profile_row(Phase p);
  // Tells the watchdog; the first step of the run has the long allowance.
  void watch(Phase p) { watchdog->enter(phase_name(p).data(), position.step, position.step == first_step); }
  // Runs host work as a host-timed phase.
  template <class F>
  void host_phase(Phase p, F&& f) {
    watch(p);
    device_counts->begin_phase();
    const double t0 = now_seconds();
    f();
    const double t1 = now_seconds();
    clock->add_host(p, t0, t1);
    device_counts->end_phase(p);
    if (profile) profile->add_host(profile_row(p), t1 - t0);
  }
  // Forward and backward are profiled per layer (and the loss); other device phases as one row.
  template <class F>
  void device_phase(Phase p, F&& f) {
    watch(p);
    device_counts->begin_phase();
    const bool row = profile && p != Phase::forward && p != Phase::backward;
    if (row) profile->device_begin(profile_row(p));
    clock->begin(p);
    f();
    clock->end(p);
    if (row) profile->device_end(profile_row(p));
    device_counts->end_phase(p);
  }
  // Calls a rank-0 hook (interval, checkpoint, epoch), if set.
  template <class Hook, class Arg>
  void rank0_hook(const Hook& hook, const Arg& arg) {
    if (comm.rank() == 0 && hook) hook(arg);
  }
  void record_bucket_events();
  void make_buckets();
  bool pre_divide_gradients();
  void retune_buckets(int64_t step);
  void record_copies();
  void evaluation_pass(const std::string& what, const std::function<void(const data::Batch&, const Tensor&)>& per_batch);
  EpochReport evaluate(int64_t epoch);
  EvaluationMetrics evaluate_samples();
};

void Trainer::Impl::setup() {
  validate_config(cfg);
  install_stop_signal_handlers();
  watchdog = std::make_unique<Watchdog>(WatchdogOptions{cfg.watchdog_s, cfg.watchdog_long_s, comm.rank(), comm.host()},
                                        [this](const std::string&) { abort_comm.load()->abort(kExitWatchdog); });
  const int world = comm.size();
  accumulate = cfg.accumulate_steps;
  if (cfg.batch % (world * accumulate) != 0) {
    const std::string per = accumulate == 1 ? std::to_string(world) + " ranks"
                                            : std::to_string(world) + " ranks x " + std::to_string(accumulate) +
                                                  " micro-batches (train.accumulate_steps)";
    throw ConsistentError("train.batch = " + std::to_string(cfg.batch) + " is not divisible by the " + per +
                          ": choose a multiple of " + std::to_string(world * accumulate));
  }
  local_batch = cfg.batch / (world * accumulate);
  timeline = std::make_unique<Timeline>(comm, cfg.timeline);
  setup_device();
  clock = std::make_unique<PhaseClock>(*backend, timers, *timeline);
  staging.start = now_seconds();
  setup_data();
  staging.end = now_seconds();
  setup_model();
  setup_optimizer();
  setup_input();
  setup_checkpoints();
  setup_profile();
}

// The device counters (always) and run.profile (when asked for). A backend without a kernel trace
// says so once and the run goes on.
void Trainer::Impl::setup_profile() {
  device_counts = std::make_unique<DeviceStepCounts>(backend->counters());
  if (cfg.extra_launches > 0) testing_scratch = backend->zeros({1}, DType::f32, "testing.extra_launches scratch");
  const ProfileRequest request = parse_profile_request(cfg.profile);
  if (!request.any()) return;
  profile = std::make_unique<LayerProfile>(*backend, *model, request);
  if (request.layers) model->observe_layers(profile.get());
  if (comm.rank() == 0 && !profile->kernel_trace_unavailable().empty())
    std::printf("run.profile = kernels: %s; the run goes on without kernel records\n",
                profile->kernel_trace_unavailable().c_str());
}

std::string Trainer::Impl::profile_row(Phase p) {
  switch (p) {
    case Phase::data_wait: return "data wait";
    case Phase::allreduce_exposed: return "allreduce (exposed)";
    case Phase::agree: return "agreement";
    default: return std::string(phase_name(p));
  }
}

// testing.extra_host_syncs and testing.extra_launches: work a step does not need, which the device
// counters must see.
void Trainer::Impl::testing_extras() {
  for (int64_t i = 0; i < cfg.extra_launches; ++i)
    launch(backend->compute_stream(), "testing_extra_launch", 1, kernels::Scale{testing_scratch.device_data<float>(), 1.0f});
  for (int64_t i = 0; i < cfg.extra_host_syncs; ++i) backend->compute_stream().synchronize();
}

// Opens the next step's window of the device counters and the profile; the first measured plain
// step's counts are printed once it has closed.
void Trainer::Impl::begin_counted_step() {
  const bool measured = position.step - first_step >= cfg.warmup_log_steps;
  device_counts->begin_step(measured);
  if (profile) profile->begin_step(measured);
  print_device_line();
}

void Trainer::Impl::print_device_line() {
  if (device_line_printed || !device_counts->first_measured_ready()) return;
  device_line_printed = true;
  if (comm.rank() == 0)
    std::printf("device per step: %s\n", device_counts_line(device_counts->first_measured()).c_str());
}

// The profile's table on rank 0's stdout and in run.dir/profile.json.
void Trainer::Impl::finish_profile(TrainResult& result) {
  device_counts->close_step();
  print_device_line();
  result.device_per_step = device_counts->summary();
  if (!profile || comm.rank() != 0) return;
  profile->pause();
  const nlohmann::json j = profile->json(cfg.model, precision_name(cfg.precision), local_batch);
  std::printf("%s", profile->table(25).c_str());
  if (!cfg.run_dir.empty()) write_json_file(cfg.run_dir + "/profile.json", j, 1);
}

// The backend on this rank's device (none shared with another rank) and the gradient transport.
void Trainer::Impl::setup_device() {
  collective_check(comm, [&] { backend = make_backend(rank_backend_options(cfg, comm)); });
  check_devices_not_shared(comm, *backend);
  grad_comm = comm::make_gradient_communicator(comm, *backend, cfg.comm_backend);
  if (grad_comm) abort_comm.store(grad_comm.get());
  telemetry = std::make_unique<GpuTelemetry>(backend->device_id());
  const std::vector<std::string> status = comm::allgather_strings(comm, gpu_telemetry_status(*telemetry));
  if (comm.rank() == 0) telemetry_line = train::gpu_telemetry_line(status);
}

void Trainer::Impl::setup_data() {
  const int world = comm.size();
  data_path = cfg.data_path;
  if (data_path == "synthetic") data_path = ensure_synthetic_dataset(cfg, comm);
  // A missing or bad file fails identically on every rank: one message from rank 0, no abort.
  data::LoaderOptions lo = train_loader_options(cfg, data_path, local_batch, backend.get());
  lo.comm = comm::mpi_comm_of(comm);  // stage together (one copy per node); null: each rank alone
  collective_check(comm, [&] { train_loader = std::make_unique<data::DataLoader>(lo, comm.rank(), world); });
  const data::DatasetInfo& info = train_loader->info();
  if (updates_per_epoch() < 1)
    throw ConsistentError("data set " + data_path + " has " + std::to_string(info.num_samples) +
                          " training samples, fewer than one global batch of " + std::to_string(cfg.batch) +
                          ": lower train.batch or use more data");
  if (cfg.normalize == "file" && info.mean.empty())
    throw ConsistentError("data set " + data_path +
                          " stores no mean/std of its training samples, so they would train unnormalized: add them with "
                          "`st-info --add-stats " + data_path + "`, or set data.normalize = none to train on the raw values");
  if (const std::string problem = data::input_options_problem(input_options(info, precision_dtype(cfg.precision)));
      !problem.empty())
    throw ConsistentError(problem);
  summarize_staging(*train_loader);
  if (!cfg.evaluate) return;
  check_eval_split();
  const data::LoaderOptions eo = eval_loader_options(lo, cfg);
  collective_check(comm, [&] { eval_loader = std::make_unique<data::DataLoader>(eo, comm.rank(), world); });
  summarize_staging(*eval_loader);
}

// Stage mode: every rank's staging of the loader's split, gathered, and this rank's on the timeline.
void Trainer::Impl::summarize_staging(const data::DataLoader& loader) {
  if (cfg.data_mode != data::LoaderMode::stage) return;
  const data::StagingReport r = loader.stats().staging;
  staging_summaries.push_back(gather_staging(comm, loader.options().split, r));
  const std::string name = "staging " + loader.options().split;
  timeline->record(name.c_str(), r.start, r.start + r.seconds, 4);
  if (r.exchange_seconds > 0)
    timeline->record("stage exchange", r.start + r.seconds - r.exchange_seconds, r.start + r.seconds, 4);
}

// A missing evaluation split fails with the fix (st-pack-folder writes train and val, no test).
void Trainer::Impl::check_eval_split() {
  const std::vector<std::string> splits = data::DatasetFile(data_path, {}).splits();
  if (std::find(splits.begin(), splits.end(), cfg.eval_split) != splits.end()) return;
  std::string fix = "--train.evaluate false";
  for (const char* other : {"val", "test"})
    if (std::find(splits.begin(), splits.end(), other) != splits.end()) {
      fix = "--train.eval_split " + std::string(other) + " (or " + fix + ")";
      break;
    }
  throw ConsistentError("data set " + data_path + " has no '" + cfg.eval_split + "' split to evaluate on (it has: " +
                        join(splits) + "): set " + fix);
}

void Trainer::Impl::setup_model() {
  const data::DatasetInfo& info = train_loader->info();
  collective_check(comm, [&] {
    const DatasetShape shape =
        model_shape_for(cfg, DatasetShape{info.sample_shape, static_cast<int64_t>(info.classes.size())});
    model = make_run_model(cfg, shape);
    ST_USER_CHECK(model->evaluation_only().empty(), "model.name = ", cfg.model, " cannot train on ",
                  shape_string(shape.sample_shape), ": ", model->evaluation_only());
  });
  pin_algorithms();
  collective_check(comm, [&] {
    build_model();
    loss.build(*backend, local_batch, static_cast<int64_t>(info.classes.size()));
    auxiliary_losses = std::vector<nn::SoftmaxCrossEntropy>(model->auxiliary_outputs().size());
    for (nn::SoftmaxCrossEntropy& a : auxiliary_losses)
      a.build(*backend, local_batch, static_cast<int64_t>(info.classes.size()));
  });
  time_algorithms();
  choose_bf16_gemm();
  model->init_parameters(cfg.seed);
  // Identical replicas: rank 0's weights everywhere.
  broadcast_tensor(comm, *backend, model->flat_parameters(), 0);
  model->refresh_compute_parameters();
}

void Trainer::Impl::build_model() {
  model->build(*backend, local_batch, precision_dtype(cfg.precision));
  if (!cfg.sync_bn) return;
  statistics_reducer = std::make_unique<CommunicatorStatisticsReducer>(*backend, comm);
  use_statistics_reducer(*model, statistics_reducer.get());
}

// The backend's AlgorithmTuning where every rank's backend has one (so that no rank waits for a
// broadcast the others skip), else null.
AlgorithmTuning* Trainer::Impl::every_rank_algorithm_tuning() {
  AlgorithmTuning* tuning = backend->algorithm_tuning();
  return on_every_rank(comm, tuning != nullptr) ? tuning : nullptr;
}

// run.cudnn_algorithms before the model is built (train/algorithm_choice.hpp): a resumed
// checkpoint's or a file's book pinned, else the heuristic's choices until rank 0 has timed.
void Trainer::Impl::pin_algorithms() {
  AlgorithmTuning* tuning = every_rank_algorithm_tuning();
  if (!tuning) return;
  algorithms.emplace();
  (void)pin_algorithms_before_build(comm, *tuning, cfg.cudnn_algorithms, [&] { return resumed_algorithms(cfg); },
                                    *algorithms);
}

// After the model is built: rank 0's timed book on every rank, and the model built again with it.
void Trainer::Impl::time_algorithms() {
  if (!algorithms) return;
  AlgorithmTuning* tuning = backend->algorithm_tuning();
  if (time_algorithms_after_build(comm, *tuning, *algorithms)) collective_check(comm, [&] { build_model(); });
  algorithms->book = tuning->algorithms();
}

// A bf16 model on a backend that can run its GEMM-shaped ops two ways: the choice every rank takes
// (train/bf16_gemm_choice.hpp), and the model built again where it differs from the backend's start.
// Only where every rank has the choice, so that no rank waits for a broadcast the others skip.
void Trainer::Impl::choose_bf16_gemm() {
  Bf16GemmTuning* tuning = model->compute_dtype() == DType::bf16 ? backend->bf16_gemm_tuning() : nullptr;
  if (!on_every_rank(comm, tuning != nullptr)) return;
  bf16_gemm = train::choose_bf16_gemm(
      comm, cfg.cpu_bf16_gemm, cfg.cpu_bf16_gemm_pin, [&] { return resumed_bf16_gemm(cfg); },
      [&] { return tuning->time_bf16_gemm_shapes(kBf16GemmProbeRounds, kBf16GemmProbeBudgetS); });
  if (bf16_gemm->compute == tuning->bf16_gemm()) return;
  tuning->set_bf16_gemm(bf16_gemm->compute);
  collective_check(comm, [&] { build_model(); });
}

void Trainer::Impl::setup_optimizer() {
  collective_check(comm, [&] {
    schedule = std::make_unique<optim::LrSchedule>(lr_schedule_options(cfg, updates_per_epoch()));
    if (accumulate > 1)
      accumulated = backend->empty({model->flat_gradients().numel()}, DType::f32, "accumulated gradients");
    optimizer = make_optimizer(cfg, *backend, *model);
    const optim::LossScalerOptions so = loss_scaler_options(cfg);
    scaler = std::make_unique<optim::LossScaler>(so);
    kernels::StepRules rules;
    rules.lr = schedule->curve();
    rules.scaler_enabled = so.enabled;
    rules.growth = so.growth;
    rules.backoff = so.backoff;
    rules.growth_interval = so.interval;
    std::tie(rules.beta1, rules.beta2) = optimizer->bias_correction_betas();
    std::vector<std::pair<int64_t, int64_t>> tensors;
    for (const auto& slot : model->slots()) tensors.emplace_back(slot.offset, slot.count);
    step_state = std::make_unique<DeviceStepState>(*backend, tensors, rules, comm.rank(), comm.size());
  });
  agreement = std::make_unique<HostAgreement>(comm);
  std::vector<int64_t> slice_elements;
  for (const auto& s : model->slots()) slice_elements.push_back(s.count);
  bucket_tuner = std::make_unique<BucketTuner>(cfg, comm, gradient_comm(), *backend, std::move(slice_elements));
  make_buckets();
}

// The gradient buckets at the tuner's current size.
void Trainer::Impl::make_buckets() {
  std::vector<comm::GradientSlice> slices;
  for (const auto& s : model->slots()) slices.push_back(comm::GradientSlice{s.offset, s.count});
  buckets.reset();
  buckets = std::make_unique<comm::GradientBuckets>(gradient_comm(), *backend, model->flat_gradients(), slices,
                                                    bucket_tuner->bucket_bytes(), cfg.progress,
                                                    precision_dtype(cfg.comm_dtype), pre_divide_gradients());
  bucket_tuner->set_bucket_count(buckets->bucket_count());
}

// The host transports sum: with the loss's gradient scaled by 1 / global batch instead of 1 / local
// batch, each rank's gradients are its share of the mean and no pass over them divides after the
// all-reduce (the same values where the world size is a power of two). A device communicator
// averages itself (ncclAvg); fp16 compute keeps its gradients' range.
bool Trainer::Impl::pre_divide_gradients() {
  return comm.size() > 1 &&
         comm::bucket_transport(gradient_comm(), *backend) != comm::BucketTransport::stream_ordered &&
         cfg.precision != Precision::fp16;
}

// comm.bucket_mb = auto: once the first steps' backward is timed, the chosen size replaces the
// single start-up bucket (between steps, with nothing in flight).
void Trainer::Impl::retune_buckets(int64_t step) {
  if (!bucket_tuner->choose_after(step)) return;
  buckets->read_all_times();  // the replaced buckets' last all-reduces, once (a step at start-up)
  record_bucket_events();
  retired_allreduce_seconds += buckets->stats().allreduce_seconds;
  make_buckets();
  if (comm.rank() == 0) std::printf("%s\n", bucket_tuner->choice_line().c_str());
}

// run.init_from: the file's parameters and buffers over the fresh ones on every rank (each reads the
// same file), a classifier of another class count left at its initialization; rank 0 lists both.
void Trainer::Impl::initialize_from(const std::string& path) {
  WeightsFit fit;
  std::string file;
  collective_check(comm, [&] {
    file = resolve_model_file(path, "run.init_from =");
    fit = load_model_weights(*backend, *model, read_model_weights(file), classes(), true, "run.init_from =");
  });
  if (comm.rank() != 0) return;
  std::printf("run.init_from: %s: kept %zu tensors (%lld values): %s\n", file.c_str(), fit.kept.size(),
              static_cast<long long>(fit.kept_values), join(fit.kept).c_str());
  if (fit.reinitialized.empty()) std::printf("run.init_from: re-initialized: none\n");
  else
    std::printf("run.init_from: re-initialized (the classifier of another class count, train.seed %llu): %s\n",
                static_cast<unsigned long long>(cfg.seed), join(fit.reinitialized).c_str());
}

// The checkpointer, and the state of run.resume's checkpoint (or a fresh start at step 0, from
// run.init_from's weights where set).
void Trainer::Impl::setup_checkpoints() {
  const IdentityKeys identity = identity_keys(cfg, train_loader->info().num_samples);
  checkpointer = std::make_unique<Checkpointer>(cfg, comm, identity);
  resumed = resume_from_checkpoint(cfg, comm, state(), identity, updates_per_epoch());
  if (resumed) {
    position = resumed->start;
    checkpointer->mark_saved(resumed->saved.step);
    if (!cfg.init_from.empty() && comm.rank() == 0)
      std::printf("run.init_from: not used: the run continues from its own checkpoint %s\n", resumed->path.c_str());
  } else if (!cfg.init_from.empty()) {
    initialize_from(cfg.init_from);
  }
  step_state->push(position.step, *scaler, optimizer->steps_taken());
}

// What the input pipeline needs: the data set's shape, type and statistics, data.augment, the
// compute type.
data::InputOptions Trainer::Impl::input_options(const data::DatasetInfo& info, DType compute) const {
  data::InputOptions o;
  o.source = data_path;
  o.sample_shape = info.sample_shape;
  o.stored = info.dtype;
  o.compute = compute;
  o.batch = local_batch;
  if (cfg.normalize == "file") {
    o.mean = info.mean;
    o.std = info.std;
  }
  o.augment = cfg.augment;
  o.augment_pad = cfg.augment_pad;
  o.augment_flip = cfg.augment_flip;
  o.seed = cfg.seed;
  return o;
}

void Trainer::Impl::setup_input() {
  input = std::make_unique<data::InputPipeline>(*backend, input_options(train_loader->info(), model->compute_dtype()));
  interval_sums = backend->zeros({nn::kLossSumsSize}, DType::f64, "loss sums (interval)");
  eval_sums = backend->zeros({nn::kLossSumsSize}, DType::f64, "loss sums (evaluation)");
}

// One update: K = train.accumulate_steps micro-batches (the first is `first`), the earlier ones'
// gradients summed into `accumulated`, the last one's backward with the gradient buckets (which add
// the sum into each bucket before its all-reduce), then the verdict, the update and the agreement.
StepFlags Trainer::Impl::train_step(const data::Batch& first, int64_t step) {
  const data::Batch* b = &first;
  data::NonFiniteScan input_scan = first.nonfinite;  // the reader refills the slot once it is released
  for (int64_t micro = 0; micro + 1 < accumulate; ++micro) {
    forward_micro_batch(*b, step, false);
    device_phase(Phase::backward, [&] { backward_micro_batch(micro); });
    b = next_micro_batch(b, input_scan, step, micro + 1);
  }
  start_agreement(input_scan);
  forward_micro_batch(*b, step, true);
  const bool timed = bucket_tuner->measuring(step);
  device_phase(Phase::backward, [&] {
    buckets->begin_step(step);
    buckets->add_accumulated(accumulate > 1 ? &accumulated : nullptr);
    if (timed) bucket_tuner->backward_begin();
    if (profile) profile->device_begin("loss", true);
    std::vector<const Tensor*> auxiliary_dlogits;
    const Tensor& dlogits = loss_gradient(loss, 1.0f, &auxiliary_dlogits);
    if (profile) profile->device_end("loss", true);
    // On cpu the bucket work between layers is the step's own time: the profile gives it a row.
    const bool host_is_device = backend->compute_stream().runs_inline();
    model->backward(
        dlogits,
        [&](size_t layer) {
          const double t0 = profile && host_is_device ? now_seconds() : 0.0;
          const size_t first_slot = model->first_slot(layer);
          const size_t n = model->layers()[layer]->parameters().size();
          if (timed) bucket_tuner->layer_ready(n);
          for (size_t sl = first_slot; sl < first_slot + n; ++sl) buckets->mark_ready(sl);
          buckets->poll();
          if (profile && host_is_device) profile->add_host("gradient buckets", now_seconds() - t0);
        },
        auxiliary_dlogits);
    if (timed) bucket_tuner->backward_end();
  });
  // Handing the slot back wakes the reader thread; count it as data time, not as a gap.
  host_phase(Phase::data_wait, [&] { train_loader->release(b); });
  wait_for_gradients();
  device_phase(Phase::agree, [&] { judge_step(); });
  device_phase(Phase::optimizer, [&] { apply_update(step); });
  read_outcomes(false);
  const StepFlags flags = finish_agreement();
  if (flags.input_nonfinite) stop_at_nonfinite_input(flags.input_nonfinite, input_scan, step);
  if (flags.nonfinite_step) {
    drain_step_state();  // every rank has read the step back by now
    ST_CHECK(nonfinite_stop && nonfinite_stop->step + 1 == flags.nonfinite_step, "rank ", comm.rank(),
             " did not read back the inf/NaN of step ", flags.nonfinite_step - 1, " that another rank read");
    stop_at_nonfinite(*nonfinite_stop);
  }
  record_bucket_events();
  retune_buckets(step);
  return flags;
}

// A micro-batch's input and forward with its loss. Dropout draws by (seed, step, sample), so the
// micro-batches of an update draw as the whole batch would. The testing injections act on the last.
void Trainer::Impl::forward_micro_batch(const data::Batch& b, int64_t step, bool last) {
  device_phase(Phase::input, [&] { input->prepare(b, step_state->step(), true); });
  device_phase(Phase::forward, [&] {
    model->set_random_state(cfg.seed, step_state->step(), input->indices());
    const Tensor& logits = model->forward(input->input(), true);
    if (profile) profile->device_begin("loss");
    if (last && comm.rank() == cfg.inject_inf_loss_rank && step == cfg.inject_inf_loss_step)
      launch(backend->compute_stream(), "testing_inject_inf", 1,
             kernels::SetValue<float>{logits.device_data<float>(), std::numeric_limits<float>::infinity()});
    loss.forward(logits, input->labels());
    if (!last) loss.accumulate(interval_sums);  // the last micro-batch's loss joins them with the verdict
    for (size_t k = 0; k < auxiliary_losses.size(); ++k)
      auxiliary_losses[k].forward(model->auxiliary_logits(k), input->labels());
    if (profile) profile->device_end("loss");
    if (last) testing_extras();
  });
}

// The gradient of a loss with `weight`, and of the auxiliary losses into `auxiliary`. fp16: the
// loss scale (on the device) multiplies it. The mean is over every micro-batch of the update, and
// with pre-divided buckets over the global batch, so that the all-reduce's sum is the mean.
const Tensor& Trainer::Impl::loss_gradient(nn::SoftmaxCrossEntropy& l, float weight,
                                           std::vector<const Tensor*>* auxiliary) {
  const int64_t mean_over = local_batch * accumulate * (buckets->pre_divided() ? comm.size() : 1);
  const double* loss_scale = scaler->enabled() ? step_state->loss_scale() : nullptr;
  const auto gradient = [&](nn::SoftmaxCrossEntropy& x, float w) -> const Tensor& {
    if (loss_scale) return x.backward(w, loss_scale, static_cast<float>(mean_over));
    return x.backward(w / static_cast<float>(mean_over));
  };
  const Tensor& dlogits = gradient(l, weight);
  for (size_t k = 0; k < auxiliary_losses.size(); ++k)
    auxiliary->push_back(&gradient(auxiliary_losses[k], model->auxiliary_outputs()[k].weight));
  return dlogits;
}

// An earlier micro-batch's backward, without the buckets, and its gradients into the sum.
void Trainer::Impl::backward_micro_batch(int64_t micro) {
  std::vector<const Tensor*> auxiliary_dlogits;
  const Tensor& dlogits = loss_gradient(loss, 1.0f, &auxiliary_dlogits);
  model->backward(dlogits, [](size_t) {}, auxiliary_dlogits);
  const Tensor& g = model->flat_gradients();
  Stream& s = backend->compute_stream();
  if (micro == 0) {
    backend->copy_async(s, accumulated, g);
    return;
  }
  float* sum = accumulated.device_data<float>();
  launch_elements(s, "accumulate_gradients", g.numel(), kernels::AddTensors<float>{sum, g.device_data<float>(), sum});
}

// Releases micro-batch `b` and takes the next of the update, its inf/NaN scan added to `scan`.
const data::Batch* Trainer::Impl::next_micro_batch(const data::Batch* b, data::NonFiniteScan& scan, int64_t step,
                                                  int64_t micro) {
  host_phase(Phase::data_wait, [&] {
    train_loader->release(b);
    inject_signal(step, micro);
    b = train_loader->next();
  });
  ST_CHECK(b, "the loader ended inside the accumulation round of step ", step);
  scan.add(b->nonfinite);
  return b;
}

// Exposed communication: the wait after backward has finished on the device. A stream-ordered
// exchange makes the compute stream wait for the last all-reduce, so that wait is timed with
// device events; a host-driven exchange blocks the host, timed with its clock.
void Trainer::Impl::wait_for_gradients() {
  if (!buckets->exchange().host_driven()) {
    device_phase(Phase::allreduce_exposed, [&] { buckets->wait_all(); });
    return;
  }
  watch(Phase::allreduce_exposed);
  device_counts->begin_phase();
  const comm::ExposedWait w = buckets->wait_all();
  clock->add_host(Phase::allreduce_exposed, w.start, w.end);
  device_counts->end_phase(Phase::allreduce_exposed);
  if (profile) profile->add_host(profile_row(Phase::allreduce_exposed), w.end - w.start);
}

// The host's agreement of the step, started as it starts: a stop signal this rank received, the
// first inf/NaN step it has read back (train.on_nonfinite = stop), NaN/inf in its input batch
// (stream mode) and rank 0's checkpoint clock.
void Trainer::Impl::start_agreement(const data::NonFiniteScan& input_scan) {
  StepFlags local;
  const int rank = comm.rank(), world = comm.size();
  if (input_scan.any()) local.input_nonfinite = StepFlags::mark(rank, world);
  local.stop_signal = received_stop_signal();
  if (local.stop_signal) local.stop_rank = StepFlags::mark(rank, world);
  local.checkpoint_by_time = checkpointer->time_due() ? 1 : 0;
  if (nonfinite_stop) local.nonfinite_step = static_cast<int32_t>(nonfinite_stop->step + 1);
  agreement->start(local);
}

// Completes the agreement as the step ends, where every rank has long contributed.
StepFlags Trainer::Impl::finish_agreement() {
  const double t0 = now_seconds();
  const StepFlags all = agreement->finish();
  const double t1 = now_seconds();
  clock->add_host(Phase::agree, t0, t1);
  if (profile) profile->add_host(profile_row(Phase::agree), t1 - t0);
  return all;
}

// The step's inf/NaN verdict on the device: this rank's reduced gradients (the same on
// every rank, agreed all the same: the decision to skip must be identical everywhere or the
// replicas diverge; testing.inject_overflow_* shows it in the tests) and its loss, combined across
// ranks in stream order. A rank's inf/NaN loss stays out of the interval's sums.
void Trainer::Impl::judge_step() {
  const bool inject = comm.rank() == cfg.inject_overflow_rank && position.step == cfg.inject_overflow_step;
  step_state->verdict(model->flat_gradients(), loss.row_losses(), inject);
  loss.accumulate_unless(interval_sums, step_state->local_loss_mark());
  step_state->agree(gradient_comm(), comm);
}

// The steps the host has read back: train.on_nonfinite = skip's warning, or the first step that
// stops the run (stop; agreed in the next step's flags). fp16's steps are the loss scaler's.
void Trainer::Impl::read_outcomes(bool drain) {
  for (StepOutcome& o : step_state->completed(drain)) {
    if (!o.nonfinite() || scaler->enabled()) continue;
    if (cfg.on_nonfinite == NonFinitePolicy::stop) {
      if (!nonfinite_stop) nonfinite_stop = std::move(o);
      continue;
    }
    const auto n = static_cast<long long>(o.state.skipped_steps);
    if (comm.rank() == 0 && (n <= 10 || n % 100 == 0))
      std::fprintf(stderr,
                   "scaletrain: warning: step %lld: inf/NaN in the loss or gradients; every rank skipped its update "
                   "(train.on_nonfinite = skip; %lld skipped so far)\n",
                   static_cast<long long>(o.step), n);
  }
}

// At the points that wait for the device anyway (logging, checkpoints, the end, a stop): every step
// read back, the host's loss scaler and optimizer counters brought up to date, and a stopping
// inf/NaN step acted on (every rank has read the same steps here).
void Trainer::Impl::drain_step_state() {
  read_outcomes(true);
  step_state->pull(*scaler, *optimizer);
}

// Stream mode: a rank's batch held NaN/inf samples. Every rank ends here, whatever
// train.on_nonfinite says, before the step's update, with that rank's count (broadcast) in one
// message naming the file, the split, the first bad sample and the step (rank 0 prints it).
void Trainer::Impl::stop_at_nonfinite_input(int32_t mark, data::NonFiniteScan scan, int64_t step) {
  const int root = StepFlags::marked_rank(mark, comm.size());
  comm.broadcast(&scan, sizeof scan, root);
  throw ConsistentError(data::nonfinite_message(
      data_path, train_loader->options().split, scan,
      "the batch of step " + std::to_string(step) + " (rank " + std::to_string(root) + ", data.mode = stream)"));
}

// train.on_nonfinite = stop (fp32, bf16): every rank ends here, once it has read the step back, with
// the same message (rank 0 prints it).
void Trainer::Impl::stop_at_nonfinite(const StepOutcome& o) {
  NonFiniteStep s;
  s.step = o.step;
  s.epoch = o.epoch;
  s.lr = schedule->lr(o.step);
  s.loss_rank = StepFlags::marked_rank(o.loss_mark, comm.size());
  s.gradients = std::any_of(o.tensor_counts.begin(), o.tensor_counts.end(), [](double c) { return c > 0; });
  s.precision = precision_name(cfg.precision);
  throw ConsistentError(nonfinite_stop_message(s, first_nonfinite_gradient(*model, step_state->counts_by_tensor(o))));
}

// The optimizer step on the reduced gradients as the device decided it (skipped where any rank found
// inf/NaN; fp16: the loss scaler backs off or grows, the gradients are unscaled), with the
// compute-type copy of the weights, in one launch; then the convolutions' filters in their ops' own
// layout (one launch, where the ops read another than PyTorch's).
void Trainer::Impl::apply_update(int64_t step) {
  step_state->decide(step, position.epoch);
  const bool copy = model->compute_dtype() != DType::f32;
  optimizer->step_on_device(model->flat_parameters(), model->flat_gradients(), step_state->device(),
                            scaler->enabled(), copy ? &model->flat_compute_parameters() : nullptr);
  model->refresh_laid_out_parameters();
}

// Tests (testing.inject_signal): this rank sends its process the signal before `step` (before its
// micro-batch testing.inject_signal_micro) and waits until the signal thread has recorded it, so
// that the step it stops after is known.
void Trainer::Impl::inject_signal(int64_t step, int64_t micro) {
  if (cfg.inject_signal.empty() || comm.rank() != cfg.inject_signal_rank || step != cfg.inject_signal_step ||
      micro != cfg.inject_signal_micro)
    return;
  const int signal = cfg.inject_signal == "TERM" ? SIGTERM : cfg.inject_signal == "INT" ? SIGINT : SIGUSR1;
  ST_CHECK(kill(getpid(), signal) == 0, "testing.inject_signal: kill(", signal_name(signal), ") failed");
  const double deadline = now_seconds() + 10.0;
  while (received_stop_signal() == 0) {
    ST_CHECK(now_seconds() < deadline, "testing.inject_signal: ", signal_name(signal), " was not recorded within 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The buckets' all-reduces read since the last call (stream-ordered: of earlier steps, once their
// events have completed) on the timeline's all-reduce track, each at its own step.
void Trainer::Impl::record_bucket_events() {
  const std::vector<comm::BucketEvent> events = buckets->take_events();
  if (!timeline->enabled()) return;
  for (const comm::BucketEvent& e : events) {
    char name[24];
    std::snprintf(name, sizeof name, "allreduce b%lld", static_cast<long long>(e.bucket));
    timeline->record(name, e.start, e.end, 1, e.step);
  }
}

// The batches' copies (device staging): their time is the h2d phase; the timeline's copy track.
void Trainer::Impl::record_copies() {
  for (const data::CopyRecord& r : train_loader->take_copy_records()) {
    timers.add(Phase::h2d, r.end - r.start);
    if (timeline->enabled()) timeline->record("h2d", r.start, r.end, 2, -1);
  }
}

// One pass over the evaluation split (the caller has told the watchdog): each batch's logits, after
// the loss's forward of them, to `per_batch`; inf/NaN input found in stream mode fails every rank, naming `what`.
void Trainer::Impl::evaluation_pass(const std::string& what,
                                    const std::function<void(const data::Batch&, const Tensor&)>& per_batch) {
  eval_loader->start_epoch(0);
  data::NonFiniteScan bad_input;  // stream mode
  while (const data::Batch* b = eval_loader->next()) {
    bad_input.add(b->nonfinite);
    const Tensor& logits = model->forward(input->prepare(*b, nullptr, false), false);
    loss.forward(logits, input->labels());
    per_batch(*b, logits);
    eval_loader->release(b);
  }
  eval_loader->end_epoch();
  (void)eval_loader->take_copy_records();  // evaluation copies are not part of the step phases
  if (const data::NonFiniteScan all = agree_on_input_scan(comm, bad_input); all.any())
    throw ConsistentError(data::nonfinite_message(data_path, cfg.eval_split, all, what + " (data.mode = stream)"));
}

EpochReport Trainer::Impl::evaluate(int64_t epoch) {
  EpochReport r;
  r.epoch = epoch;
  if (!eval_loader) return r;
  watchdog->enter("evaluation", position.step, true);
  broadcast_model_buffers(*backend, *model, comm);
  const int64_t n_total = eval_loader->info().num_samples;
  backend->fill_zero_async(backend->compute_stream(), eval_sums);
  // Padding rows (the wrap-around that keeps shards equal) are evaluated but not counted.
  evaluation_pass("the evaluation after epoch " + std::to_string(epoch + 1), [&](const data::Batch& b, const Tensor&) {
    loss.accumulate(eval_sums, eval_loader->valid_rows(b));
  });
  const nn::LossResult lr = nn::SoftmaxCrossEntropy::read_sums(*backend, eval_sums);
  double sums[3] = {lr.loss_sum, static_cast<double>(lr.correct), static_cast<double>(lr.count)};
  comm.allreduce(sums, 3, DType::f64, comm::ReduceOp::sum);
  r.eval_samples = static_cast<int64_t>(sums[2]);
  r.eval_loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  r.eval_accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
  ST_CHECK(r.eval_samples == n_total, "evaluation counted ", r.eval_samples, " samples of the ", n_total, " in split '",
           cfg.eval_split, "' of ", data_path);
  return r;
}

// Every sample of the evaluation split once, recorded on the device (train/split_evaluation.hpp).
EvaluationMetrics Trainer::Impl::evaluate_samples() {
  ST_CHECK(eval_loader, "evaluation without an evaluation split");
  watchdog->enter("evaluation", position.step, true);
  SampleRecorder recorder(*backend, eval_loader->steps_per_epoch() * local_batch, classes());
  evaluation_pass("run.evaluate_only", [&](const data::Batch& b, const Tensor& logits) {
    recorder.record(logits, input->labels(), loss.row_losses(), eval_loader->valid_rows(b), b.indices);
  });
  const std::vector<SampleRecord> records = recorder.gather(comm);
  watchdog->enter("finish", position.step, true);
  if (comm.rank() != 0) return {};
  const EvaluationMetrics m = summarize_records(records, classes());
  ST_CHECK(m.samples == eval_loader->info().num_samples, "evaluation recorded ", m.samples, " samples of the ",
           eval_loader->info().num_samples, " in split '", cfg.eval_split, "' of ", data_path);
  return m;
}

EvaluationMetrics Trainer::evaluate_file(const std::string& path) {
  Impl& m = *impl_;
  collective_check(m.comm, [&] {
    const std::string file = resolve_model_file(path, "run.evaluate_only =");
    (void)load_model_weights(*m.backend, *m.model, read_model_weights(file), m.classes(), false,
                             "run.evaluate_only =");
  });
  return m.evaluate_samples();
}

const std::vector<std::string>& Trainer::class_names() const { return impl_->train_loader->info().classes; }

Trainer::Trainer(RunConfig cfg, comm::Communicator& comm) : impl_(std::make_unique<Impl>(std::move(cfg), comm)) {
  impl_->setup();
}
Trainer::~Trainer() {
  // Nothing queued may outlive the buffers it uses.
  if (impl_ && impl_->backend) {
    try {
      impl_->backend->synchronize();
    } catch (...) {
    }
  }
}

nn::Model& Trainer::model() { return *impl_->model; }
Backend& Trainer::backend() { return *impl_->backend; }
std::string Trainer::device_description() const {
  const std::string d = impl_->backend->description();
  const DType compute = impl_->model->compute_dtype();
  if (compute == DType::f32) return d;
  return d + "; " + impl_->backend->precision_support(compute).note;
}
PrecisionReport Trainer::precision() const {
  const RunConfig& c = impl_->cfg;
  const PrecisionSupport ps = impl_->backend->precision_support(impl_->model->compute_dtype());
  PrecisionReport r;
  r.train = precision_name(c.precision);
  r.compute = ps.note;
  r.native = ps.native;
  r.comm = precision_name(c.comm_dtype);
  r.loss_scaling = impl_->scaler->enabled();
  r.loss_scale_init = r.loss_scaling ? c.loss_scale_init : 1.0;
  return r;
}
TransportReport Trainer::transport() const {
  const RunConfig& c = impl_->cfg;
  const comm::CommBackend b = comm::resolve_comm_backend(c.comm_backend, c.device);
  TransportReport r;
  r.backend = comm::comm_backend_name(b);
  r.buckets = impl_->buckets->exchange().name();
  r.description = comm::gradient_transport_description(b, c.device);
  return r;
}
int64_t Trainer::per_rank_batch() const { return impl_->local_batch; }
int64_t Trainer::steps_per_epoch() const { return impl_->updates_per_epoch(); }
int64_t Trainer::train_samples() const { return impl_->train_loader->info().num_samples; }
int64_t Trainer::eval_samples() const { return impl_->eval_loader ? impl_->eval_loader->info().num_samples : 0; }
void Trainer::on_interval(std::function<void(const IntervalTimings&)> f) { impl_->interval_hook = std::move(f); }
void Trainer::on_checkpoint(std::function<void(const CheckpointRecord&)> f) { impl_->checkpoint_hook = std::move(f); }
void Trainer::on_epoch(EpochHooks hooks) { impl_->epoch_hooks = std::move(hooks); }
TimeSpan Trainer::staging_time() const { return impl_->staging; }
const std::vector<StagingSummary>& Trainer::staging() const { return impl_->staging_summaries; }
const std::string& Trainer::gpu_telemetry_line() const { return impl_->telemetry_line; }
const std::optional<ResumeRecord>& Trainer::resumed_from() const { return impl_->resumed; }
const BucketReport& Trainer::bucket_report() const { return impl_->bucket_tuner->report(); }
const std::optional<Bf16GemmChoice>& Trainer::bf16_gemm_choice() const { return impl_->bf16_gemm; }
const std::optional<AlgorithmChoice>& Trainer::algorithm_choice() const { return impl_->algorithms; }

namespace {

// Loss sums of `sums` on the device, reduced over ranks (the device sums are read, then zeroed).
nn::LossResult take_sums(Backend& backend, comm::Communicator& comm, const Tensor& sums) {
  const nn::LossResult local = nn::SoftmaxCrossEntropy::read_sums(backend, sums);
  backend.fill_zero_async(backend.compute_stream(), sums);
  double v[3] = {local.loss_sum, static_cast<double>(local.correct), static_cast<double>(local.count)};
  comm.allreduce(v, 3, DType::f64, comm::ReduceOp::sum);
  nn::LossResult r;
  r.loss_sum = v[0];
  r.correct = static_cast<int64_t>(v[1]);
  r.count = static_cast<int64_t>(v[2]);
  return r;
}

}  // namespace

// The logging interval that ends at the current position: device sums and phase times reduced
// over ranks, then progress and the interval hook.
void Trainer::Impl::finish_interval(int64_t epoch, IntervalReducer& reducer, ProgressPrinter& progress) {
  watchdog->enter("interval", position.step);
  clock->flush();
  drain_step_state();
  record_copies();
  const nn::LossResult sums = take_sums(*backend, comm, interval_sums);
  const double allreduce_seconds = buckets->stats().allreduce_seconds + retired_allreduce_seconds;
  record_bucket_events();
  retired_allreduce_seconds = 0;
  buckets->reset_stats();
  const int64_t step = position.step;
  IntervalTimings it = reducer.close_interval(epoch, step, sums, timers, allreduce_seconds, telemetry->sample());
  it.lr = schedule->lr(std::max<int64_t>(step - 1, 0));
  it.loss_scale = scaler->scale();
  it.skipped_steps = scaler->skipped_steps();
  const int64_t in_epoch = position.step_in_epoch == 0 ? updates_per_epoch() : position.step_in_epoch;
  progress.interval(epoch, in_epoch, step, it.loss, it.accuracy, it.lr, it.samples_per_second,
                    1e3 * it.wall_seconds / static_cast<double>(it.steps), it.elapsed_seconds);
  rank0_hook(interval_hook, it);
  timers.reset();
  reducer.restart_interval_clock();  // the hooks' time is not the next interval's
}

void Trainer::Impl::checkpoint() {
  watchdog->enter("checkpoint", position.step, true);
  drain_step_state();
  if (checkpointer->enabled()) broadcast_model_buffers(*backend, *model, comm);
  const CheckpointRecord rec = checkpointer->save(state(), position);
  if (!rec.path.empty()) rank0_hook(checkpoint_hook, rec);
}

// The steps of `epoch` from the current position, up to `planned` steps in all, with their
// intervals and periodic checkpoints. Returns the steps taken. A stop signal (agreed by every rank)
// ends the epoch after the step with a checkpoint.
int64_t Trainer::Impl::run_epoch(int64_t epoch, int64_t planned, IntervalReducer& reducer, ProgressPrinter& progress) {
  const int64_t spe = updates_per_epoch();
  const int64_t first = position.step_in_epoch;
  reducer.begin_epoch();
  train_loader->start_epoch(epoch, first * accumulate);
  int64_t in_epoch = first;
  while (position.step < planned && in_epoch < spe) {
    inject_signal(position.step);
    begin_counted_step();
    const double t_step = now_seconds();
    clock->begin_step(position.step);
    const data::Batch* b = nullptr;
    host_phase(Phase::data_wait, [&] { b = train_loader->next(); });
    if (!b) break;
    const StepFlags flags = train_step(*b, position.step);
    clock->end_step();
    if (profile) profile->finish_step();
    const double step_seconds = now_seconds() - t_step;
    timers.add(Phase::step, step_seconds);
    if (profile) profile->add_step_time(step_seconds);
    ++in_epoch;
    const bool epoch_over = position.step + 1 == planned || in_epoch == spe;
    const bool stopping = flags.stop_signal != 0;
    position = in_epoch == spe ? TrainingPosition{position.step + 1, epoch + 1, 0}
                               : TrainingPosition{position.step + 1, epoch, in_epoch};
    // The epoch's last copies are logged once the reader has stopped.
    if (epoch_over || stopping) train_loader->end_epoch();
    if (position.step % cfg.log_every == 0 || epoch_over || stopping) {
      device_counts->mark_logging();
      finish_interval(epoch, reducer, progress);
    }
    if (stopping) stop = flags;
    if (stopping || checkpointer->due(position.step, flags.checkpoint_by_time != 0)) {
      device_counts->mark_logging();
      checkpoint();
    }
    if (stopping) break;
  }
  return in_epoch - first;
}

TrainResult Trainer::run() {
  Impl& m = *impl_;
  const RunConfig& cfg = m.cfg;
  const int64_t spe = m.updates_per_epoch();
  const int64_t planned = cfg.max_steps > 0 ? std::min(cfg.max_steps, cfg.epochs * spe) : cfg.epochs * spe;
  ProgressPrinter progress(m.comm.rank() == 0, cfg, spe, planned);
  const int64_t first_step = m.position.step;
  m.first_step = first_step;
  IntervalReducer reducer(m.comm, cfg.batch, cfg.warmup_log_steps, first_step);
  TrainResult result;
  while (m.position.epoch < cfg.epochs && m.position.step < planned) {
    const int64_t epoch = m.position.epoch;
    m.rank0_hook(m.epoch_hooks.started, epoch);
    const int64_t steps = m.run_epoch(epoch, planned, reducer, progress);
    if (m.stop.stop_signal) break;  // no evaluation: a stop must be quick (SIGTERM is followed by SIGKILL)
    m.rank0_hook(m.epoch_hooks.trained, epoch);
    EpochReport rep = reducer.close_epoch(epoch, steps);
    if (cfg.evaluate) {
      m.device_counts->begin_evaluation();
      if (m.profile) m.profile->pause();
      const EpochReport ev = m.evaluate(epoch);
      m.device_counts->end_evaluation();
      rep.eval_loss = ev.eval_loss;
      rep.eval_accuracy = ev.eval_accuracy;
      rep.eval_samples = ev.eval_samples;
      rep.reached_target = cfg.target_accuracy > 0 && rep.eval_accuracy >= cfg.target_accuracy;
    }
    progress.epoch_end(rep);
    m.rank0_hook(m.epoch_hooks.finished, rep);
    result.epochs.push_back(rep);
    reducer.restart_interval_clock();
    if (rep.reached_target && result.target_epoch < 0) result.target_epoch = epoch;
    if (m.position.epoch == epoch) break;               // stopped inside the epoch (train.max_steps)
    if (rep.reached_target && cfg.stop_at_target) break;  // identical on every rank: the accuracy is reduced
  }
  m.watchdog->enter("finish", m.position.step, true);
  m.finish_profile(result);
  m.backend->synchronize();
  m.drain_step_state();
  if (m.nonfinite_stop) m.stop_at_nonfinite(*m.nonfinite_stop);
  if (cfg.checkpoint_at_end && !m.stop.stop_signal) m.checkpoint();
  reducer.finish(result, m.position.step - first_step);
  result.stop_signal = m.stop.stop_signal;
  result.stop_rank = StepFlags::marked_rank(m.stop.stop_rank, m.comm.size());
  if (m.stop.stop_signal) result.stop_checkpoint = m.checkpointer->saved_path(m.position.step);
  result.final_step = m.position.step;
  result.final_loss_scale = m.scaler->scale();
  result.skipped_steps = m.scaler->skipped_steps();
  if (!result.epochs.empty()) {
    result.final_eval_accuracy = result.epochs.back().eval_accuracy;
    result.final_eval_loss = result.epochs.back().eval_loss;
  }
  progress.finish(result);
  if (m.timeline->enabled())
    m.timeline->write(cfg.run_dir + "/timeline.json", m.resumed ? m.resumed->path : std::string());
  return result;
}

std::string rank_table(comm::Communicator& comm, const std::string& device_description) {
  constexpr size_t kRow = 320;
  char mine[kRow] = {};
  std::snprintf(mine, kRow, "%6d %6d  %-24.24s %-8d %s", comm.rank(), comm.local_rank(), comm.host().c_str(),
                static_cast<int>(getpid()), device_description.c_str());
  std::vector<char> all(kRow * static_cast<size_t>(comm.size()));
  comm.gather(mine, kRow, all.data(), 0);
  if (comm.rank() != 0) return "";
  std::string out = "  rank  local  host                     pid      device\n";
  for (int r = 0; r < comm.size(); ++r) out += std::string(all.data() + static_cast<size_t>(r) * kRow) + "\n";
  return out;
}

}  // namespace scaletrain::train
