// Checkpointer and resume (train/checkpointer.hpp).
#include "scaletrain/train/checkpointer.hpp"

#include <cstdio>
#include <filesystem>

#include "scaletrain/backend/algorithm_tuning.hpp"
#include "scaletrain/backend/bf16_gemm_tuning.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/algorithm_choice.hpp"
#include "scaletrain/train/errors.hpp"
#include "scaletrain/train/model_buffers.hpp"
#include "scaletrain/train/run_log.hpp"

namespace scaletrain::train {
namespace {

std::vector<float> to_vector(const Tensor& host) {
  const float* p = host.data<float>();
  return std::vector<float>(p, p + host.numel());
}

std::string git_commit() {
  for (const auto& [k, v] : build_versions())
    if (k == "git_commit") return v;
  return "unknown";
}

int64_t directory_bytes(const std::string& dir) {
  int64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) total += static_cast<int64_t>(e.file_size());
  return total;
}

}  // namespace

Checkpointer::Checkpointer(const RunConfig& cfg, comm::Communicator& comm, IdentityKeys identity)
    : cfg_(cfg), comm_(comm), identity_(std::move(identity)), last_time_(now_seconds()) {
  if (!cfg.run_dir.empty()) store_.emplace(cfg.run_dir, cfg.checkpoint_keep);
}

bool Checkpointer::time_due() const {
  return enabled() && cfg_.checkpoint_seconds > 0 && comm_.rank() == 0 &&
         now_seconds() - last_time_ >= cfg_.checkpoint_seconds;
}

bool Checkpointer::due(int64_t step, bool by_time) const {
  if (!enabled()) return false;
  return by_time || (cfg_.checkpoint_steps > 0 && step % cfg_.checkpoint_steps == 0);
}

// Every rank's checksum against every other's: replicas must be bitwise identical.
void Checkpointer::compare_checksums(uint64_t mine, int64_t step) {
  std::vector<uint64_t> all(static_cast<size_t>(comm_.size()));
  comm_.allgather(&mine, sizeof mine, all.data());
  std::string differing;
  for (int r = 1; r < comm_.size(); ++r)
    if (all[static_cast<size_t>(r)] != all[0]) differing += (differing.empty() ? "" : ", ") + std::to_string(r);
  if (differing.empty()) return;
  char first[24];
  std::snprintf(first, sizeof first, "%016llx", static_cast<unsigned long long>(all[0]));
  throw ConsistentError("checkpoint at step " + std::to_string(step) + ": the parameters of rank(s) " + differing +
                        " differ from rank 0's (parameters and buffers: checksum " + first +
                        "): the replicas have silently diverged; no checkpoint was written");
}

namespace {
// The model's buffers into the state's host copies.
void download_buffers(const TrainingState& state, CheckpointState& s) {
  if (const Tensor& f32 = state.model.flat_buffers(DType::f32); f32.defined())
    s.buffers_f32 = to_vector(state.backend.download(f32));
  if (const Tensor& i64 = state.model.flat_buffers(DType::i64); i64.defined()) {
    const Tensor host = state.backend.download(i64);
    s.buffers_i64.assign(host.data<int64_t>(), host.data<int64_t>() + host.numel());
  }
}
}  // namespace

CheckpointState Checkpointer::snapshot(const TrainingState& state, const TrainingPosition& position,
                                       std::vector<float> params, uint64_t checksum) {
  CheckpointState s;
  s.parameters = std::move(params);
  download_buffers(state, s);
  s.optimizer = state.optimizer.name();
  s.optimizer_steps = state.optimizer.steps_taken();
  const auto buffers = state.optimizer.state();
  if (!buffers.empty()) s.optimizer_buffer_names = state.optimizer.state_names();
  for (const Tensor* t : buffers) s.optimizer_buffers.push_back(to_vector(state.backend.download(*t)));
  CheckpointMeta& m = s.meta;
  m.position = position;
  m.seed = cfg_.seed;
  m.loss_scale = state.scaler.raw_scale();
  m.loss_scale_clean_steps = state.scaler.clean_steps_in_a_row();
  m.skipped_steps = state.scaler.skipped_steps();
  m.world_size = comm_.size();
  m.global_batch = cfg_.batch;
  m.data_mode = data::loader_mode_name(cfg_.data_mode);
  m.git_commit = git_commit();
  m.config_toml = config_to_toml(cfg_);
  m.config_hash = config_hash(cfg_);
  m.identity = identity_;
  m.parameter_checksum = checksum;
  const Bf16GemmTuning* tuning = state.backend.bf16_gemm_tuning();
  if (tuning && state.model.compute_dtype() == DType::bf16) m.bf16_gemm = bf16_gemm_compute_name(tuning->bf16_gemm());
  if (AlgorithmTuning* algorithms = state.backend.algorithm_tuning())
    m.algorithms = algorithm_book_json(algorithms->algorithms()).dump();
  return s;
}

CheckpointRecord Checkpointer::save(const TrainingState& state, const TrainingPosition& position) {
  CheckpointRecord rec;
  if (!enabled() || position.step == last_saved_step_) return rec;
  const double t0 = now_seconds();
  std::vector<float> params = to_vector(state.backend.download(state.model.flat_parameters()));
  if (comm_.rank() == cfg_.inject_divergence_rank && !diverged_once_ && !params.empty()) {
    params[0] += 1e-3f;  // tests: this rank's replica as the checkpoint reads it has drifted
    diverged_once_ = true;
  }
  const uint64_t checksum = parameter_checksum(params.data(), static_cast<int64_t>(params.size()));
  compare_checksums(checksum * 1099511628211ull ^ model_buffers_checksum(state.backend, state.model), position.step);
  const int crash = position.step == cfg_.inject_checkpoint_crash_step ? 1 : -1;
  root_check(comm_, [&] {
    rec.path = store_->write(state.model, snapshot(state, position, std::move(params), checksum), crash);
  });
  // Every rank knows the write succeeded: only now does `latest` move.
  root_check(comm_, [&] { store_->publish(rec.path); });
  last_saved_step_ = position.step;
  last_time_ = now_seconds();
  if (comm_.rank() != 0) return CheckpointRecord{};
  rec.step = position.step;
  rec.bytes = directory_bytes(rec.path);
  rec.seconds = now_seconds() - t0;
  std::printf("checkpoint: %s (%.1f MB) written in %.2f s\n", rec.path.c_str(), static_cast<double>(rec.bytes) / 1e6,
              rec.seconds);
  return rec;
}

namespace {

// Rank 0 resolves run.resume to a checkpoint directory ("" to start fresh) and tells everyone.
std::string resolve_resume_path(const RunConfig& cfg, comm::Communicator& comm) {
  std::string path;
  root_check(comm, [&] { path = resume_checkpoint_dir(cfg); });
  broadcast_string(comm, path, 0);
  return path;
}

void restore_parameters(const TrainingState& state, const std::vector<float>& params) {
  Tensor& flat = state.model.flat_parameters();
  ST_CHECK(static_cast<int64_t>(params.size()) == flat.numel(), "checkpoint holds ", params.size(),
           " parameters, the model has ", flat.numel());
  state.backend.upload(flat, params);
  state.model.refresh_compute_parameters();
}

void restore_buffers(const TrainingState& state, const CheckpointState& saved) {
  if (Tensor& f32 = state.model.flat_buffers(DType::f32); f32.defined()) state.backend.upload(f32, saved.buffers_f32);
  if (Tensor& i64 = state.model.flat_buffers(DType::i64); i64.defined()) {
    Tensor host(i64.shape(), DType::i64, "checkpoint.buffers.i64");
    std::copy(saved.buffers_i64.begin(), saved.buffers_i64.end(), host.data<int64_t>());
    state.backend.copy_async(state.backend.compute_stream(), i64, host);
    state.backend.synchronize();
  }
}

std::string saved_precision(const CheckpointMeta& m) {
  for (const auto& [k, v] : m.identity)
    if (k == "train.precision") return v;
  return "";
}

TrainingPosition start_position(const CheckpointMeta& saved, const RunConfig& cfg, int world, std::string& note) {
  std::string why;
  if (resume_mid_epoch(saved, cfg, world, why)) return saved.position;
  TrainingPosition p = saved.position;
  p.epoch += 1;
  p.step_in_epoch = 0;
  note = "continuing at the start of epoch " + std::to_string(p.epoch + 1) + ", not at step " +
         std::to_string(saved.position.step_in_epoch) + " of epoch " + std::to_string(saved.position.epoch + 1) +
         ": " + why;
  return p;
}

}  // namespace

std::string resume_checkpoint_dir(const RunConfig& cfg) {
  if (cfg.resume.empty()) return "";
  if (cfg.resume == "auto") return CheckpointStore(cfg.run_dir, 1).latest();
  return resolve_checkpoint_path(cfg.resume, "run.resume =");
}

std::string resumed_bf16_gemm(const RunConfig& cfg) {
  const std::string dir = resume_checkpoint_dir(cfg);
  return dir.empty() ? "" : read_checkpoint_meta(dir).bf16_gemm;
}

std::pair<std::string, std::string> resumed_algorithms(const RunConfig& cfg) {
  const std::string dir = resume_checkpoint_dir(cfg);
  if (dir.empty()) return {};
  return {dir, read_checkpoint_meta(dir).algorithms};
}

std::optional<ResumeRecord> resume_from_checkpoint(const RunConfig& cfg, comm::Communicator& comm,
                                                   const TrainingState& state, const IdentityKeys& identity,
                                                   int64_t steps_per_epoch) {
  if (cfg.resume.empty()) return std::nullopt;
  const std::string path = resolve_resume_path(cfg, comm);
  const bool root = comm.rank() == 0;
  if (path.empty()) {
    if (root) std::printf("resume: no checkpoint in %s/checkpoints yet: starting fresh\n", cfg.run_dir.c_str());
    return std::nullopt;
  }
  CheckpointState saved;
  std::vector<std::string> forced;
  collective_check(comm, [&] {
    // The identity keys first: a refusal names what differs, not the first dataset that does not fit.
    forced = check_resume_compatible(read_checkpoint_meta(path).identity, identity, path, cfg.resume_force);
    saved = read_checkpoint(path, state.model);
    ST_CHECK(saved.optimizer == state.optimizer.name(), "checkpoint ", path, " holds ", saved.optimizer,
             " state; this run uses ", state.optimizer.name());
    ST_CHECK(parameter_checksum(saved.parameters.data(), static_cast<int64_t>(saved.parameters.size())) ==
                 saved.meta.parameter_checksum,
             "checkpoint ", path, ": the parameters do not match the checksum in ", kCheckpointTrainerFile,
             " (a damaged file)");
    restore_parameters(state, saved.parameters);
    restore_buffers(state, saved);
    state.optimizer.restore(saved.optimizer_steps, saved.optimizer_buffers, state.model.parameter_count());
    if (state.scaler.enabled() && saved_precision(saved.meta) == "fp16")
      state.scaler.restore(saved.meta.loss_scale, saved.meta.loss_scale_clean_steps, saved.meta.skipped_steps);
    else if (!state.scaler.enabled())  // train.on_nonfinite = skip counts on
      state.scaler.restore(state.scaler.raw_scale(), 0, saved.meta.skipped_steps);
  });
  ResumeRecord r;
  r.path = path;
  r.saved = saved.meta.position;
  r.saved_world_size = saved.meta.world_size;
  r.start = start_position(saved.meta, cfg, comm.size(), r.note);
  for (const std::string& f : forced) r.note += (r.note.empty() ? "forced: " : "; forced: ") + f;
  ST_CHECK(r.start.step_in_epoch < steps_per_epoch, "checkpoint ", path, " stands at step ", r.start.step_in_epoch,
           " of an epoch, but this run's epochs have ", steps_per_epoch, " steps");
  if (root) {
    std::printf("resume: %s: step %lld (epoch %lld, step %lld of it), written by %d rank(s), now %d\n", path.c_str(),
                static_cast<long long>(r.saved.step), static_cast<long long>(r.saved.epoch + 1),
                static_cast<long long>(r.saved.step_in_epoch), r.saved_world_size, comm.size());
    if (!r.note.empty()) std::printf("resume: %s\n", r.note.c_str());
  }
  return r;
}

}  // namespace scaletrain::train
