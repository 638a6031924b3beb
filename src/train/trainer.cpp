// Trainer: start-up (data, model, identical weights, optimizer, buckets), the step loop with
// phase timers, distributed evaluation and rank-0 progress.
#include "scaletrain/train/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/kernels/normalize.hpp"
#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/optim/lr_schedule.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/train/errors.hpp"
#include "scaletrain/train/progress.hpp"
#include "scaletrain/train/synthetic_data.hpp"
#include "scaletrain/train/timeline.hpp"

namespace scaletrain::train {

struct Trainer::Impl {
  RunConfig cfg;
  comm::Communicator& comm;
  std::unique_ptr<Backend> backend;
  std::string data_path;
  std::unique_ptr<data::DataLoader> train_loader;
  std::unique_ptr<data::DataLoader> eval_loader;
  std::unique_ptr<nn::Model> model;
  nn::SoftmaxCrossEntropy loss;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LrSchedule> schedule;
  std::unique_ptr<comm::GradientBuckets> buckets;
  int64_t local_batch = 0;
  int64_t classes = 0;
  Tensor input;      // [local_batch, ...sample_shape] f32, normalized
  Tensor augmented;  // u8 scratch for crop/flip
  Tensor mean, inv_std;
  std::function<void(const IntervalTimings&)> interval_hook;
  std::unique_ptr<Timeline> timeline;
  PhaseTimers timers;

  // Runs f as one phase: adds its time to the timers and, when enabled, to the timeline.
  template <class F>
  void phase(Phase p, int64_t step, F&& f) {
    const double t0 = now_seconds();
    f();
    const double t1 = now_seconds();
    timers.add(p, t1 - t0);
    if (timeline->enabled()) timeline->record(phase_name(p).data(), t0, t1, 0, step);
  }

  Impl(RunConfig c, comm::Communicator& cm) : cfg(std::move(c)), comm(cm) {}

  void setup();
  void prepare_input(const data::Batch& b, int64_t step, bool training);
  void record_bucket_events(int64_t step);
  EpochReport evaluate(int64_t epoch);
};

void Trainer::Impl::setup() {
  validate_config(cfg);
  const int world = comm.size();
  if (cfg.batch % world != 0)
    throw ConsistentError("train.batch = " + std::to_string(cfg.batch) + " is not divisible by the " +
                          std::to_string(world) + " ranks: choose a multiple of " + std::to_string(world));
  local_batch = cfg.batch / world;
  timeline = std::make_unique<Timeline>(comm, cfg.timeline);
  backend = make_cpu_backend(static_cast<int>(cfg.threads));

  data_path = cfg.data_path;
  if (data_path == "synthetic") data_path = ensure_synthetic_dataset(cfg, comm);
  // A missing or bad file fails identically on every rank: one message from rank 0, no abort.

  data::LoaderOptions lo;
  lo.path = data_path;
  lo.split = "train";
  lo.batch = local_batch;
  lo.seed = cfg.seed;
  lo.mode = cfg.data_mode;
  lo.prefetch = static_cast<int>(cfg.prefetch);
  lo.drop_remainder = cfg.drop_remainder;
  lo.shuffle = true;
  collective_check(comm, [&] { train_loader = std::make_unique<data::DataLoader>(lo, comm.rank(), world); });
  const data::DatasetInfo& info = train_loader->info();
  if (train_loader->steps_per_epoch() < 1)
    throw ConsistentError("data set " + data_path + " has " + std::to_string(info.num_samples) +
                          " training samples, fewer than one global batch of " + std::to_string(cfg.batch) +
                          ": lower train.batch or use more data");
  classes = static_cast<int64_t>(info.classes.size());

  if (cfg.evaluate) {
    data::LoaderOptions eo = lo;
    eo.split = cfg.eval_split;
    eo.shuffle = false;
    eo.drop_remainder = false;
    collective_check(comm, [&] { eval_loader = std::make_unique<data::DataLoader>(eo, comm.rank(), world); });
  }

  collective_check(comm, [&] {
    model = nn::make_zoo_model(cfg.model, info.sample_shape, classes);
    model->build(*backend, local_batch);
  });
  model->init_parameters(cfg.seed);
  // Identical replicas: rank 0's weights everywhere.
  comm.broadcast(model->flat_parameters().raw(), static_cast<int64_t>(model->flat_parameters().bytes()), 0);
  loss.build(local_batch, classes);

  const int64_t spe = train_loader->steps_per_epoch();
  double base_lr = cfg.lr;
  if (cfg.scale_lr) base_lr = optim::linear_scaled_lr(static_cast<float>(cfg.lr), cfg.batch, cfg.reference_batch);
  optim::LrScheduleOptions so;
  so.kind = cfg.schedule;
  so.base_lr = static_cast<float>(base_lr);
  so.warmup_steps = static_cast<int64_t>(std::llround(cfg.warmup_epochs * static_cast<double>(spe)));
  so.step_size = cfg.step_epochs * spe;
  so.gamma = static_cast<float>(cfg.gamma);
  // The schedule spans the configured epochs; train.max_steps only cuts a run short along it.
  so.total_steps = cfg.epochs * spe;
  so.min_lr = static_cast<float>(cfg.min_lr);
  collective_check(comm, [&] {
    schedule = std::make_unique<optim::LrSchedule>(so);
    if (cfg.optimizer == "sgd") {
      optim::SgdOptions o;
      o.momentum = static_cast<float>(cfg.momentum);
      o.nesterov = cfg.nesterov;
      o.weight_decay = static_cast<float>(cfg.weight_decay);
      optimizer = optim::make_sgd(o);
    } else {
      optim::AdamWOptions o;
      o.beta1 = static_cast<float>(cfg.beta1);
      o.beta2 = static_cast<float>(cfg.beta2);
      o.eps = static_cast<float>(cfg.eps);
      o.weight_decay = static_cast<float>(cfg.weight_decay);
      optimizer = optim::make_adamw(o);
    }
  });

  std::vector<comm::GradientSlice> slices;
  for (const auto& s : model->slots()) slices.push_back(comm::GradientSlice{s.offset, s.count});
  buckets = std::make_unique<comm::GradientBuckets>(comm, model->flat_gradients().data<float>(), slices,
                                                    static_cast<int64_t>(cfg.bucket_mb * 1024 * 1024), cfg.progress);

  Shape in{local_batch};
  in.insert(in.end(), info.sample_shape.begin(), info.sample_shape.end());
  input = Tensor(in);
  augmented = Tensor(in, DType::u8);
  const int64_t channels = info.sample_shape.back();
  mean = Tensor({channels});
  inv_std = Tensor({channels});
  for (int64_t c = 0; c < channels; ++c) {
    const bool have = static_cast<int64_t>(info.mean.size()) == channels && static_cast<int64_t>(info.std.size()) == channels;
    mean.data<float>()[c] = have ? info.mean[static_cast<size_t>(c)] : 0.0f;
    const float sd = have ? info.std[static_cast<size_t>(c)] : 1.0f;
    inv_std.data<float>()[c] = sd > 0 ? 1.0f / sd : 1.0f;
  }
}

void Trainer::Impl::prepare_input(const data::Batch& b, int64_t step, bool training) {
  const data::DatasetInfo& info = train_loader->info();
  ST_CHECK(b.samples.dtype() == DType::u8, "data set ", data_path, " stores ", dtype_name(b.samples.dtype()),
           " samples; the trainer reads uint8 images");
  const uint8_t* src = b.samples.data<uint8_t>();
  if (training && cfg.augment) {
    ST_CHECK(info.sample_shape.size() == 3, "data.augment needs [H, W, C] samples");
    kernels::launch_host("augment_crop_flip", local_batch,
                         kernels::AugmentCropFlipU8{src, augmented.data<uint8_t>(), info.sample_shape[0],
                                                    info.sample_shape[1], info.sample_shape[2], cfg.augment_pad,
                                                    cfg.augment_flip, cfg.seed + static_cast<uint64_t>(comm.rank()) * 7919u,
                                                    static_cast<uint64_t>(step)});
    src = augmented.data<uint8_t>();
  }
  kernels::launch_host("normalize_u8", input.numel() / info.sample_shape.back(),
                       kernels::NormalizeU8{src, input.data<float>(), mean.data<float>(), inv_std.data<float>(),
                                            info.sample_shape.back()});
}

void Trainer::Impl::record_bucket_events(int64_t step) {
  if (!timeline->enabled()) return;
  for (const auto& e : buckets->last_step_events()) {
    char name[24];
    std::snprintf(name, sizeof name, "allreduce b%lld", static_cast<long long>(e.bucket));
    timeline->record(name, e.start, e.end, 1, step);
  }
}

EpochReport Trainer::Impl::evaluate(int64_t epoch) {
  EpochReport r;
  r.epoch = epoch;
  if (!eval_loader) return r;
  eval_loader->start_epoch(0);
  const int64_t n_total = eval_loader->info().num_samples;
  float sums[3] = {0, 0, 0};  // loss, correct, counted
  while (const data::Batch* b = eval_loader->next()) {
    prepare_input(*b, 0, false);
    const Tensor& logits = model->forward(input, false);
    // Padding rows (the wrap-around that keeps shards equal) are evaluated but not counted.
    const int64_t valid = eval_loader->valid_rows(*b);
    nn::LossResult lr = loss.forward(logits, b->labels, valid);
    sums[0] += static_cast<float>(lr.loss_sum);
    sums[1] += static_cast<float>(lr.correct);
    sums[2] += static_cast<float>(lr.count);
    eval_loader->release(b);
  }
  comm.allreduce(sums, 3, DType::f32, comm::ReduceOp::sum);
  r.eval_samples = static_cast<int64_t>(sums[2]);
  r.eval_loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  r.eval_accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
  ST_CHECK(r.eval_samples == n_total, "evaluation counted ", r.eval_samples, " samples of the ", n_total, " in split '",
           cfg.eval_split, "' of ", data_path);
  return r;
}

Trainer::Trainer(RunConfig cfg, comm::Communicator& comm) : impl_(std::make_unique<Impl>(std::move(cfg), comm)) {
  impl_->setup();
}
Trainer::~Trainer() = default;

nn::Model& Trainer::model() { return *impl_->model; }
std::string Trainer::device_description() const { return impl_->backend->description(); }
int64_t Trainer::per_rank_batch() const { return impl_->local_batch; }
int64_t Trainer::steps_per_epoch() const { return impl_->train_loader->steps_per_epoch(); }
void Trainer::on_interval(std::function<void(const IntervalTimings&)> f) { impl_->interval_hook = std::move(f); }

TrainResult Trainer::run() {
  Impl& m = *impl_;
  const RunConfig& cfg = m.cfg;
  const bool root = m.comm.rank() == 0;
  const int64_t spe = m.train_loader->steps_per_epoch();
  const int64_t planned = cfg.max_steps > 0 ? std::min(cfg.max_steps, cfg.epochs * spe) : cfg.epochs * spe;
  ProgressPrinter progress(root, cfg, spe, planned);

  TrainResult result;
  PhaseTimers& timers = m.timers;
  int64_t step = 0;
  double interval_loss = 0, interval_correct = 0, interval_count = 0;
  int64_t interval_first = 0;
  double measured_seconds = 0;
  int64_t measured_steps = 0;
  double phase_sums[kPhaseCount] = {};
  double allreduce_total = 0;
  const Stopwatch run_clock;
  Stopwatch interval_clock;

  for (int64_t epoch = 0; epoch < cfg.epochs && step < planned; ++epoch) {
    const Stopwatch epoch_clock;
    m.train_loader->start_epoch(epoch);
    EpochReport rep;
    rep.epoch = epoch;
    double ep_loss = 0, ep_correct = 0, ep_count = 0;
    int64_t ep_steps = 0;
    while (step < planned) {
      const double t_step = now_seconds();
      const data::Batch* b = nullptr;
      m.phase(Phase::data_wait, step, [&] { b = m.train_loader->next(); });
      if (!b) break;
      m.phase(Phase::h2d, step, [&] { m.prepare_input(*b, step, true); });
      nn::LossResult lr;
      m.phase(Phase::forward, step, [&] {
        m.model->set_random_state(cfg.seed + static_cast<uint64_t>(m.comm.rank()) * 1000003u, static_cast<uint64_t>(step));
        const Tensor& logits = m.model->forward(m.input, true);
        lr = m.loss.forward(logits, b->labels);
      });
      m.phase(Phase::backward, step, [&] {
        m.buckets->begin_step();
        const Tensor& dlogits = m.loss.backward(1.0f / static_cast<float>(m.local_batch));
        m.model->backward(dlogits, [&](size_t layer) {
          const size_t first = m.model->first_slot(layer);
          const size_t n = m.model->layers()[layer]->parameters().size();
          for (size_t s = first; s < first + n; ++s) m.buckets->mark_ready(s);
          m.buckets->poll();
        });
      });
      // Handing the slot back wakes the reader thread; count it as data time, not as a gap.
      m.phase(Phase::data_wait, step, [&] { m.train_loader->release(b); });
      m.phase(Phase::allreduce_exposed, step, [&] { m.buckets->wait_all(); });
      m.record_bucket_events(step);
      m.phase(Phase::optimizer, step, [&] {
        m.optimizer->step(m.model->flat_parameters(), m.model->flat_gradients(), m.schedule->lr(step));
      });
      m.timers.add(Phase::step, now_seconds() - t_step);
      interval_loss += lr.loss_sum;
      interval_correct += static_cast<double>(lr.correct);
      interval_count += static_cast<double>(lr.count);
      ep_loss += lr.loss_sum;
      ep_correct += static_cast<double>(lr.correct);
      ep_count += static_cast<double>(lr.count);
      ++step;
      ++ep_steps;

      const bool end_of_run = step == planned;
      if (step % cfg.log_every == 0 || end_of_run || ep_steps == spe) {
        // Reduce the interval across ranks: loss and accuracy sums, and every phase's time.
        float sums[3] = {static_cast<float>(interval_loss), static_cast<float>(interval_correct),
                         static_cast<float>(interval_count)};
        m.comm.allreduce(sums, 3, DType::f32, comm::ReduceOp::sum);
        const comm::BucketStats bs = m.buckets->stats();
        m.buckets->reset_stats();
        std::vector<float> mine(kPhaseCount + 1);
        for (int p = 0; p < kPhaseCount; ++p) mine[static_cast<size_t>(p)] = static_cast<float>(timers.all()[static_cast<size_t>(p)]);
        mine[kPhaseCount] = static_cast<float>(bs.allreduce_seconds);
        std::vector<float> all(mine.size() * static_cast<size_t>(m.comm.size()));
        m.comm.allgather(mine.data(), static_cast<int64_t>(mine.size() * sizeof(float)), all.data());
        IntervalTimings it;
        it.first_step = interval_first;
        it.steps = step - interval_first;
        it.warmup = interval_first < cfg.warmup_log_steps;
        const int world = m.comm.size();
        for (int p = 0; p <= kPhaseCount; ++p) {
          double sum = 0, mn = 1e300, mx = -1;
          int slow = 0;
          for (int r = 0; r < world; ++r) {
            const double v = all[static_cast<size_t>(r) * mine.size() + static_cast<size_t>(p)];
            sum += v;
            mn = std::min(mn, v);
            if (v > mx) {
              mx = v;
              slow = r;
            }
          }
          if (p == kPhaseCount) {
            it.allreduce_total_mean = sum / world;
          } else {
            it.mean[p] = sum / world;
            it.min[p] = mn;
            it.max[p] = mx;
            it.slowest_rank[p] = slow;
          }
        }
        const double wall = interval_clock.seconds();
        if (!it.warmup) {
          measured_seconds += wall;
          measured_steps += it.steps;
          for (int p = 0; p < kPhaseCount; ++p) phase_sums[p] += it.mean[p];
          allreduce_total += it.allreduce_total_mean;
        }
        it.epoch = epoch;
        it.wall_seconds = wall;
        it.elapsed_seconds = run_clock.seconds();
        it.samples_per_second = static_cast<double>(it.steps * cfg.batch) / wall;
        it.loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
        it.accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
        it.lr = m.schedule->lr(std::max<int64_t>(step - 1, 0));
        progress.interval(epoch, ep_steps, step, it.loss, it.accuracy, it.lr, it.samples_per_second,
                          1e3 * wall / static_cast<double>(it.steps), it.elapsed_seconds);
        if (root && m.interval_hook) m.interval_hook(it);
        interval_loss = interval_correct = interval_count = 0;
        interval_first = step;
        timers.reset();
        interval_clock.reset();
      }
      if (ep_steps == spe) break;
    }
    float ep_sums[3] = {static_cast<float>(ep_loss), static_cast<float>(ep_correct), static_cast<float>(ep_count)};
    m.comm.allreduce(ep_sums, 3, DType::f32, comm::ReduceOp::sum);
    rep.steps = ep_steps;
    rep.train_loss = ep_sums[2] > 0 ? ep_sums[0] / ep_sums[2] : 0;
    rep.train_accuracy = ep_sums[2] > 0 ? ep_sums[1] / ep_sums[2] : 0;
    rep.seconds = epoch_clock.seconds();
    rep.samples_per_second = static_cast<double>(ep_steps * cfg.batch) / rep.seconds;
    if (cfg.evaluate) {
      const EpochReport ev = m.evaluate(epoch);
      rep.eval_loss = ev.eval_loss;
      rep.eval_accuracy = ev.eval_accuracy;
      rep.eval_samples = ev.eval_samples;
    }
    progress.epoch_end(rep);
    result.epochs.push_back(rep);
    interval_clock.reset();
  }
  result.steps = step;
  result.seconds = run_clock.seconds();
  result.mean_samples_per_second =
      measured_seconds > 0 ? static_cast<double>(measured_steps * cfg.batch) / measured_seconds : 0;
  if (phase_sums[static_cast<int>(Phase::step)] > 0) {
    result.exposed_allreduce_share =
        phase_sums[static_cast<int>(Phase::allreduce_exposed)] / phase_sums[static_cast<int>(Phase::step)];
    result.allreduce_total_share = allreduce_total / phase_sums[static_cast<int>(Phase::step)];
  }
  if (!result.epochs.empty()) {
    result.final_eval_accuracy = result.epochs.back().eval_accuracy;
    result.final_eval_loss = result.epochs.back().eval_loss;
  }
  progress.finish(result);
  if (m.timeline->enabled()) m.timeline->write(cfg.run_dir + "/timeline.json");
  return result;
}

std::string rank_table(comm::Communicator& comm, const std::string& device_description) {
  constexpr size_t kRow = 160;
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
