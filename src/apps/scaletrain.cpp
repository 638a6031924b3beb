// scaletrain: the batch job. `mpirun -np N scaletrain --config job.toml [--section.key value ...]`
// trains one model replica per rank with synchronous gradient all-reduce (from run.init_from's
// weights where set), or with run.evaluate_only evaluates a model.h5 or checkpoint across the ranks.
// Errors are printed once (naming rank, host, file and line) and end every rank: a configuration
// error through rank 0 and a clean exit, anything else through MPI_Abort so no rank is left
// waiting. At start-up rank 0 warns about ranks sharing cores; with run.mllog it writes
// MLPerf-HPC-style :::MLLOG lines.
// The start-up prints the rank table, the precision line and the keys that differ from their
// defaults; the whole configuration goes to run.dir/config.toml (and --print-config).
// Exit codes: 0 done; 75 stopped by SIGUSR1/SIGTERM/SIGINT after writing a checkpoint (resumable
// with run.resume = auto); 128 + the signal when stopped without run.dir (nothing saved); 69 the
// hang watchdog ended the job; 1 any error.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/core/mpi_environment.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/train/binding_check.hpp"
#include "scaletrain/train/cache_clear.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/mlperf_log.hpp"
#include "scaletrain/train/mlperf_submission.hpp"
#include "scaletrain/train/model_shape.hpp"
#include "scaletrain/train/platform_description.hpp"
#include "scaletrain/train/synthetic_data.hpp"
#include "scaletrain/train/errors.hpp"
#include "scaletrain/train/json_file.hpp"
#include "scaletrain/train/run_dir_guard.hpp"
#include "scaletrain/train/run_log.hpp"
#include "scaletrain/train/stop_signals.hpp"
#include "scaletrain/train/trainer.hpp"

using namespace scaletrain;
using namespace scaletrain::train;

namespace {

struct CommandLine {
  std::string config_file;
  bool print_config = false;
  bool summary = false;
  bool version = false;
  std::map<std::string, std::string> overrides;
};

// --help-all shows the testing section's keys too; --help hides them.
bool asks_for_every_key(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help-all") == 0) return true;
  return false;
}

// Parses argv on every rank identically. Returns false when --help was printed.
bool parse_command_line(int argc, char** argv, int rank, CommandLine& cl) {
  CLI::App app{
      "scaletrain: synchronous data-parallel training over MPI.\n"
      "Run one rank per core (CPU) or per GPU: mpirun -np N scaletrain --config job.toml\n"
      "Every configuration key can be set in the TOML file ([section] key = value) or here (--section.key value)."};
  const bool every_key = asks_for_every_key(argc, argv);
  app.set_help_flag("-h,--help", "Print this help (every key with its default) and exit");
  app.set_help_all_flag("--help-all", "Print this help with the testing section's keys too, and exit");
  app.footer("The model zoo (model.name):\n" + nn::zoo_description());
  app.add_flag("--version", cl.version, "Print the version, git commit, compiler and library versions, and exit");
  app.add_option("-c,--config", cl.config_file, "TOML configuration file")->check(CLI::ExistingFile);
  app.add_flag("--print-config", cl.print_config, "Print the resolved configuration as TOML and exit");
  app.add_flag("--summary", cl.summary, "Print the model summary (layers, shapes, parameters, FLOPs) and exit");
  static RunConfig defaults;
  for (const auto& k : config_keys()) {
    auto* opt = app.add_option_function<std::string>(
        "--" + k.key, [&cl, key = k.key](const std::string& v) { cl.overrides[key] = v; },
        k.help + " (" + k.type + ", default: " + k.get(defaults) + ")");
    opt->group(is_testing_key(k) && !every_key ? "" : k.key.substr(0, k.key.find('.')) + " keys");
    opt->type_name(k.type == "bool"         ? "BOOL"
                   : k.type == "string"     ? "TEXT"
                   : k.type == "int"        ? "INT"
                   : k.type == "auto|float" ? "auto|FLOAT"
                   : k.type == "auto|int"   ? "auto|INT"
                   : k.type == "list"       ? "LIST"
                                            : "FLOAT");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) std::printf("%s", app.help().c_str());
    return false;
  } catch (const CLI::CallForAllHelp&) {
    if (rank == 0) std::printf("%s", app.help().c_str());
    return false;
  } catch (const CLI::ExtrasError& e) {
    std::string msg = e.what();
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) == 0 && !app.get_option_no_throw(a)) {
        a = a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
        msg = "unknown option '--" + a + "' (did you mean '--" + nearest_config_key(a) + "'? --help lists every key)";
        break;
      }
    }
    throw ConsistentError(msg);
  } catch (const CLI::ParseError& e) {
    throw ConsistentError(e.what());
  }
  return true;
}

// What the start-up says about the configuration: the keys the user set away from their defaults,
// and what run.device = auto became on this rank and why.
struct ConfigNotes {
  std::vector<std::string> changed;
  std::string device;
};

// The configuration file and the overrides, with run.device = auto resolved on this rank.
RunConfig resolve_config(const CommandLine& cl, ConfigNotes& notes) {
  RunConfig cfg;
  try {
    if (!cl.config_file.empty()) apply_toml_file(cfg, cl.config_file);
    for (const auto& [k, v] : cl.overrides) set_config_value(cfg, k, v, "command line");
    notes.changed = config_differences(cfg);
    const DeviceResolution device = resolve_device_kind(cfg.device);
    if (cfg.device == DeviceKind::automatic)
      notes.device = "run.device = auto -> " + device_kind_name(device.kind) + " (" + device.reason + ")";
    cfg.device = device.kind;
    validate_config(cfg);
  } catch (const Error& e) {
    throw ConsistentError(e.message());  // the user's mistake: the message alone
  }
  return cfg;
}

// Every rank must run the same configuration: compare hashes, fail clearly on rank 0 if not.
void check_same_config(comm::Communicator& comm, const RunConfig& cfg) {
  const uint64_t mine = config_hash(cfg);
  std::vector<uint64_t> all(static_cast<size_t>(comm.size()));
  comm.allgather(&mine, sizeof mine, all.data());
  const int32_t device = static_cast<int32_t>(cfg.device);
  std::vector<int32_t> devices(static_cast<size_t>(comm.size()));
  comm.allgather(&device, sizeof device, devices.data());
  for (int r = 0; r < comm.size(); ++r) {
    if (devices[static_cast<size_t>(r)] != devices[0])
      throw ConsistentError("run.device differs between ranks: rank 0 runs on " +
                            device_kind_name(static_cast<DeviceKind>(devices[0])) + ", rank " + std::to_string(r) +
                            " on " + device_kind_name(static_cast<DeviceKind>(devices[static_cast<size_t>(r)])) +
                            " (run.device = auto found GPUs on some nodes only): set run.device");
    if (all[static_cast<size_t>(r)] != all[0])
      throw ConsistentError("the configuration differs between ranks (rank " + std::to_string(r) +
                            " differs from rank 0): every rank must be started with the same --config and options");
  }
}

// --version: what a bug report needs.
void print_version() {
  for (const auto& [name, version] : build_versions()) std::printf("%-11s %s\n", name.c_str(), version.c_str());
  const std::string gpu = gpu_library_versions();
  std::printf("%-11s %s\n", "gpu", gpu.empty() ? "none (a build without CUDA)" : gpu.c_str());
}

// The keys set away from their defaults, one per line; the rest is in run.dir/config.toml.
void print_config_differences(const RunConfig& cfg, const std::vector<std::string>& changed) {
  const std::string where = cfg.run_dir.empty() ? "--print-config" : cfg.run_dir + "/config.toml";
  if (changed.empty()) {
    std::printf("configuration: the defaults (all keys: %s)\n", where.c_str());
    return;
  }
  std::printf("configuration: %zu key(s) differ from the defaults (all keys: %s):\n", changed.size(), where.c_str());
  for (const std::string& line : changed) std::printf("  %s\n", line.c_str());
}

void print_header(comm::Communicator& comm, const RunConfig& cfg, const std::string& device, const PrecisionReport& p,
                  const TransportReport& t, const std::string& telemetry, const ConfigNotes& notes) {
  const std::string table = rank_table(comm, device);
  if (comm.rank() != 0) return;
  const long long micro = cfg.batch / (comm.size() * cfg.accumulate_steps);
  char per_rank[96];
  if (cfg.accumulate_steps > 1)
    std::snprintf(per_rank, sizeof per_rank, "%lld per rank x %lld micro-batches", micro,
                  static_cast<long long>(cfg.accumulate_steps));
  else
    std::snprintf(per_rank, sizeof per_rank, "%lld per rank", micro);
  std::printf("scaletrain | %d ranks | model %s | global batch %lld (%s) | data %s\n", comm.size(), cfg.model.c_str(),
              static_cast<long long>(cfg.batch), per_rank, cfg.data_path.c_str());
  std::printf("%s", table.c_str());
  if (!notes.device.empty()) std::printf("%s\n", notes.device.c_str());
  char scaling[64] = "off";
  if (p.loss_scaling) std::snprintf(scaling, sizeof scaling, "dynamic, initial scale %g", p.loss_scale_init);
  std::printf("precision: compute %s (%s) | gradients on the wire %s | loss scaling %s | transport %s\n",
              p.train.c_str(), p.compute.c_str(), p.comm.c_str(), scaling, t.description.c_str());
  if (!telemetry.empty()) std::printf("%s\n", telemetry.c_str());
  print_config_differences(cfg, notes.changed);
}

// Rank 0's staging lines (stage mode), and what data.shuffle = node changes.
void print_staging(int rank, const RunConfig& cfg, const std::vector<StagingSummary>& staging) {
  if (rank != 0) return;
  for (const StagingSummary& s : staging) std::printf("%s\n", staging_line(s).c_str());
  if (cfg.shuffle == "node")
    std::printf("data.shuffle = node: each node shuffles only its own share of the split (in %s), so the sample "
                "order depends on the node count and N ranks do not train exactly as 1 rank does\n",
                cfg.stage_dir.c_str());
}

// Rank 0 checks run.dir before anything is written to it (train/run_dir_guard.hpp); every rank
// gets its verdict.
void guard_run_dir(comm::Communicator& comm, const RunConfig& cfg) {
  root_check(comm, [&] {
    const std::string aside = prepare_run_dir(cfg);
    if (!aside.empty())
      std::printf("run.overwrite: the earlier run in %s was moved aside to %s\n", cfg.run_dir.c_str(), aside.c_str());
  });
}

// Rank 0's operators: what runs each layer (the cpu backend's chosen candidates), then the
// backend's algorithm choices (cuda: one line per cuDNN/cuBLASLt choice), after the header.
void print_operator_choices(int rank, const std::vector<std::string>& choices) {
  if (rank != 0 || choices.empty()) return;
  std::printf("operators (rank 0's choices):\n");
  for (const std::string& c : choices) std::printf("  %s\n", c.c_str());
}

// Rank 0 warns when ranks share cores or run more threads than they have cores, and keeps every
// rank's mask and the warnings for run.json.
void check_binding(comm::Communicator& comm, const std::vector<std::string>& hosts, int threads, RunInfo& info) {
  const std::vector<RankBinding> bindings = gather_bindings(comm, hosts, threads);
  info.binding_warnings = binding_warnings(bindings);
  for (const std::string& w : info.binding_warnings) std::fprintf(stderr, "scaletrain: warning: %s\n", w.c_str());
  if (!info.binding_warnings.empty()) std::fprintf(stderr, "scaletrain: %s\n", kBindingAdvice);
  for (const RankBinding& b : bindings) info.cpu_masks.push_back(b.mask.to_string());
}

// The MLPerf log's start-up: init (program start to now), the run's fixed figures and, with
// run.clear_cache, the data file dropped from every host's page cache (its report; none without).
std::optional<CacheClearReport> init_run(MlperfLog& mllog, comm::Communicator& comm, const RunConfig& cfg,
                                         const std::vector<std::string>& hosts, double init_start) {
  mllog.start("init", init_start);
  const double t = now_seconds();
  mllog.point("global_batch_size", cfg.batch, t);
  mllog.point("number_of_ranks", hosts.size(), t);
  mllog.point("number_of_nodes", std::set<std::string>(hosts.begin(), hosts.end()).size(), t);
  mllog.point("seed", cfg.seed, t);
  mllog.point("opt_name", optim::optimizer_kind_name(cfg.optimizer), t);
  mllog.point("opt_base_learning_rate", cfg.lr, t);
  if (cfg.target_accuracy > 0) mllog.point("target_accuracy", cfg.target_accuracy, t);
  if (comm.rank() == 0 && mllog.enabled())
    for (const std::string& w : submission_warnings(cfg)) std::fprintf(stderr, "scaletrain: warning: %s\n", w.c_str());
  std::optional<CacheClearReport> cache;
  if (cfg.clear_cache) {
    cache = clear_page_cache(comm, hosts, cfg.data_path);
    if (comm.rank() == 0) std::printf("%s\n", cache_clear_line(*cache).c_str());
  }
  mllog.point("cache_clear", cache && cache->cleared(), now_seconds());
  mllog.stop("init", now_seconds());
  return cache;
}

// MLPerf's epoch and evaluation events, the metrics.jsonl evaluation records and the time to
// accuracy (seconds from run_start to the first evaluation at or above the target).
EpochHooks epoch_events(MlperfLog& mllog, RunLog& log, const RunConfig& cfg, double run_start,
                        std::optional<double>& time_to_accuracy) {
  auto epoch_num = [](int64_t epoch) { return nlohmann::json{{"epoch_num", epoch + 1}}; };
  EpochHooks h;
  h.started = [&mllog, epoch_num](int64_t e) { mllog.start("epoch", now_seconds(), epoch_num(e)); };
  h.trained = [&mllog, &cfg, epoch_num](int64_t e) {
    const double t = now_seconds();
    mllog.stop("epoch", t, epoch_num(e));
    if (cfg.evaluate) mllog.start("eval", t, epoch_num(e));
  };
  h.finished = [&mllog, &log, &cfg, &time_to_accuracy, run_start, epoch_num](const EpochReport& r) {
    if (!cfg.evaluate) return;
    const double t = now_seconds();
    mllog.point("eval_accuracy", r.eval_accuracy, t, epoch_num(r.epoch));
    mllog.stop("eval", t, epoch_num(r.epoch));
    log.evaluation(r, t - run_start);
    if (r.reached_target && !time_to_accuracy) time_to_accuracy = t - run_start;
  };
  return h;
}

// Rank 0's line on a run stopped by a signal; the exit code.
int report_stop(int rank, const TrainResult& r) {
  const bool saved = !r.stop_checkpoint.empty();
  const int code = saved ? kExitStoppedResumable : 128 + r.stop_signal;
  if (rank != 0) return code;
  std::printf("scaletrain: stopped by %s (received by rank %d) after step %lld: ", signal_name(r.stop_signal).c_str(),
              r.stop_rank, static_cast<long long>(r.final_step));
  if (saved)
    std::printf("checkpoint %s written; exit code %d (resumable: run again with --run.resume auto)\n",
                r.stop_checkpoint.c_str(), code);
  else
    std::printf("nothing saved (no run.dir); exit code %d\n", code);
  std::fflush(stdout);
  return code;
}

// A training run: the Trainer with its logs (progress, run directory, MLPerf log). Returns the exit
// code.
int train_and_log(comm::Communicator& comm, const RunConfig& cfg, double init_start, const ConfigNotes& notes) {
  const int rank = comm.rank();
  guard_run_dir(comm, cfg);
  const std::vector<std::string> hosts = comm::allgather_strings(comm, comm.host());
  MlperfLog mllog(rank == 0 && cfg.mllog, cfg.run_dir);
  RunInfo info;
  info.cache_clear = init_run(mllog, comm, cfg, hosts, init_start);
  const double run_start = now_seconds();
  mllog.start("run", run_start);
  Trainer trainer(cfg, comm);
  mllog.start("staging", trainer.staging_time().start);
  mllog.stop("staging", trainer.staging_time().end);
  info.platform = describe_platform(comm, trainer.backend());
  log_submission(mllog, cfg, info.platform, now_seconds());
  mllog.point("train_samples", trainer.train_samples(), now_seconds());
  mllog.point("eval_samples", trainer.eval_samples(), now_seconds());
  print_header(comm, cfg, trainer.device_description(), trainer.precision(), trainer.transport(),
               trainer.gpu_telemetry_line(), notes);
  print_staging(rank, cfg, trainer.staging());
  info.staging = trainer.staging();
  info.operator_choices = trainer.model().implementations();
  for (std::string& line : trainer.backend().operator_choices()) info.operator_choices.push_back(std::move(line));
  print_operator_choices(rank, info.operator_choices);
  info.bf16_gemm = trainer.bf16_gemm_choice();
  if (rank == 0 && info.bf16_gemm) std::printf("%s\n", bf16_gemm_line(*info.bf16_gemm).c_str());
  info.algorithms = trainer.algorithm_choice();
  if (rank == 0 && info.algorithms) std::printf("%s\n", algorithm_choice_line(*info.algorithms).c_str());
  check_binding(comm, hosts, trainer.backend().num_threads(), info);
  RunLog log(rank == 0, cfg.run_dir, cfg, trainer.resumed_from());
  trainer.on_interval([&log](const IntervalTimings& t) { log.interval(t); });
  trainer.on_checkpoint([&log](const CheckpointRecord& c) { log.checkpoint(c); });
  trainer.on_epoch(epoch_events(mllog, log, cfg, run_start, info.time_to_accuracy_s));
  const TrainResult result = trainer.run();
  const bool success = result.stop_signal == 0 && (cfg.target_accuracy == 0 || result.target_epoch >= 0);
  mllog.stop("run", now_seconds(), {{"status", success ? "success" : "aborted"}});
  if (result.stop_signal) {
    log.stopped(result);
    return report_stop(rank, result);
  }
  info.world_size = comm.size();
  info.per_rank_batch = trainer.per_rank_batch();
  info.steps_per_epoch = trainer.steps_per_epoch();
  info.hosts = hosts;
  info.device = trainer.device_description();
  info.parameters = trainer.model().parameter_count();
  info.flops_per_sample = trainer.model().flops_per_sample();
  info.training_flops_per_sample = trainer.model().training_flops_per_sample();
  info.precision = trainer.precision();
  info.transport = trainer.transport();
  info.buckets = trainer.bucket_report();
  info.resumed = trainer.resumed_from();
  log.finish(info, result);
  if (rank == 0 && log.enabled()) std::printf("run directory: %s\n", cfg.run_dir.c_str());
  return 0;
}

// run.evaluate_only: the file evaluated on train.eval_split by every rank; rank 0 writes
// run.dir/eval.json (run.dir is created where missing; nothing else in it is touched) and prints one
// line. Returns the exit code.
int evaluate_and_report(comm::Communicator& comm, const RunConfig& cfg, const ConfigNotes& notes) {
  Trainer trainer(cfg, comm);
  print_header(comm, cfg, trainer.device_description(), trainer.precision(), trainer.transport(),
               trainer.gpu_telemetry_line(), notes);
  const double start = now_seconds();
  const EvaluationMetrics m = trainer.evaluate_file(cfg.evaluate_only);
  const double seconds = now_seconds() - start;
  if (comm.rank() != 0) return 0;
  nlohmann::json j = evaluation_json(m, trainer.class_names());
  j["evaluated"] = cfg.evaluate_only;
  j["model"] = cfg.model;
  j["data"] = cfg.data_path;
  j["split"] = cfg.eval_split;
  j["ranks"] = comm.size();
  j["seconds"] = seconds;
  std::string where;
  if (!cfg.run_dir.empty()) {
    std::filesystem::create_directories(cfg.run_dir);
    where = cfg.run_dir + "/eval.json";
    write_json_file(where, j, 1);
  }
  std::printf("evaluation of %s on split '%s' of %s (%d ranks, %.1f s): %s%s%s\n", cfg.evaluate_only.c_str(),
              cfg.eval_split.c_str(), cfg.data_path.c_str(), comm.size(), seconds, evaluation_line(m).c_str(),
              where.empty() ? "" : "; ", where.c_str());
  return 0;
}

// One command: --help, --version, --print-config, --summary, an evaluation (run.evaluate_only) or a training
// run. Returns the exit code.
int run_command(int argc, char** argv, int rank, double init_start) {
  CommandLine cl;
  if (!parse_command_line(argc, argv, rank, cl)) return 0;
  if (cl.version) {
    if (rank == 0) print_version();
    return 0;
  }
  ConfigNotes notes;
  const RunConfig cfg = resolve_config(cl, notes);
  auto comm = comm::make_mpi_communicator(MPI_COMM_WORLD);
  check_same_config(*comm, cfg);
  if (cl.print_config) {
    if (rank == 0) std::printf("%s", config_to_toml(cfg).c_str());
    return 0;
  }
  if (cl.summary) {  // without a data set where model.input and model.classes are both set
    const std::optional<DatasetShape> configured = configured_model_shape(cfg);
    DatasetShape ds;
    try {
      ds = configured ? *configured : model_shape_for(cfg, dataset_shape(cfg));
    } catch (const UserError& e) {
      throw ConsistentError(e.message());  // every rank finds the same: rank 0 says it once
    }
    auto model = make_run_model(cfg, ds);
    const nn::ZooEntry& e = nn::zoo_entry(cfg.model);
    if (rank == 0)
      std::printf("%s: %s (defined for %s)\n%s", e.name, e.about, shape_string(e.defined_for).c_str(),
                  model->summary().c_str());
    return 0;
  }
  if (!cfg.evaluate_only.empty()) return evaluate_and_report(*comm, cfg, notes);
  return train_and_log(*comm, cfg, init_start, notes);
}

}  // namespace

int main(int argc, char** argv) {
  const double init_start = now_seconds();
  setlinebuf(stdout);
  // First: from here on SIGUSR1/SIGTERM/SIGINT stop the run at a step boundary (one that comes during
  // MPI's start-up stops it after the first step).
  install_stop_signal_handlers();
  set_mpi_environment_defaults();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  set_error_rank(rank);
  int rc = 0;
  {
    kernels::KokkosScope kokkos;
    try {
      rc = run_command(argc, argv, rank, init_start);
    } catch (const ConsistentError& e) {
      if (rank == 0) std::fprintf(stderr, "scaletrain: error: %s\n", e.what());
      rc = 1;
    } catch (const UserError& e) {  // this rank's alone: name it
      std::fprintf(stderr, "scaletrain: error: [rank %d on %s] %s\n", rank, error_host().c_str(), e.what());
      std::fflush(stderr);
      std::fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "scaletrain: error: %s\n", e.what());
      std::fflush(stderr);
      std::fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Finalize();
  return rc;
}
