// Rank-0 progress lines, epoch lines and the end-of-run summary.
#include "scaletrain/train/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "scaletrain/train/trainer.hpp"

namespace scaletrain::train {
namespace {
std::string duration(double s) {
  char buf[32];
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

// A progress bar only for a person watching: stdout must be a terminal, and under mpirun (which
// gives its ranks a pseudo-terminal even when the job's output goes to a file) mpirun's own
// stdout must be one too. SCALETRAIN_PROGRESS_BAR=0/1 overrides the guess.
bool interactive_stdout() {
  if (const char* force = std::getenv("SCALETRAIN_PROGRESS_BAR")) return std::string(force) == "1";
  if (isatty(STDOUT_FILENO) == 0) return false;
  if (std::getenv("SLURM_JOB_ID") && !std::getenv("SLURM_PTY_PORT")) return false;
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    char target[256] = {};
    const std::string fd1 = "/proc/" + std::to_string(getppid()) + "/fd/1";
    const ssize_t n = readlink(fd1.c_str(), target, sizeof target - 1);
    if (n <= 0) return false;
    return std::string(target, static_cast<size_t>(n)).rfind("/dev/pts/", 0) == 0 ||
           std::string(target, static_cast<size_t>(n)).rfind("/dev/tty", 0) == 0;
  }
  return true;
}
}  // namespace

ProgressPrinter::ProgressPrinter(bool enabled, const RunConfig& cfg, int64_t steps_per_epoch, int64_t planned_steps)
    : enabled_(enabled),
      tty_(enabled && interactive_stdout()),
      epochs_(cfg.epochs),
      steps_per_epoch_(steps_per_epoch),
      planned_(planned_steps),
      evaluate_(cfg.evaluate),
      warmup_steps_(cfg.warmup_log_steps) {}

void ProgressPrinter::interval(int64_t epoch, int64_t step_in_epoch, int64_t step, double loss, double accuracy,
                               double lr, double samples_per_second, double ms_per_step, double elapsed) {
  if (!enabled_) return;
  const double eta = static_cast<double>(planned_ - step) * ms_per_step / 1e3;
  if (tty_) {
    const int width = 24;
    const int filled = static_cast<int>(width * step_in_epoch / std::max<int64_t>(steps_per_epoch_, 1));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::printf("\repoch %lld/%lld [%s] %lld/%lld | loss %.4f | acc %5.1f%% | lr %.4g | %.0f samples/s | %.1f ms/step | ETA %s   ",
                static_cast<long long>(epoch + 1), static_cast<long long>(epochs_), bar.c_str(),
                static_cast<long long>(step_in_epoch), static_cast<long long>(steps_per_epoch_), loss, 100 * accuracy,
                lr, samples_per_second, ms_per_step, duration(eta).c_str());
    std::fflush(stdout);
    return;
  }
  std::printf("epoch %lld/%lld | step %lld/%lld | loss %.4f | acc %5.1f%% | lr %.4g | %.0f samples/s | %.1f ms/step | "
              "elapsed %s | ETA %s\n",
              static_cast<long long>(epoch + 1), static_cast<long long>(epochs_), static_cast<long long>(step_in_epoch),
              static_cast<long long>(steps_per_epoch_), loss, 100 * accuracy, lr, samples_per_second, ms_per_step,
              duration(elapsed).c_str(), duration(eta).c_str());
}

void ProgressPrinter::epoch_end(const EpochReport& r) {
  if (!enabled_) return;
  if (tty_) std::printf("\n");
  std::printf("epoch %lld done in %s | train loss %.4f acc %.2f%% | %.0f samples/s", static_cast<long long>(r.epoch + 1),
              duration(r.seconds).c_str(), r.train_loss, 100 * r.train_accuracy, r.samples_per_second);
  if (evaluate_)
    std::printf(" | eval loss %.4f acc %.2f%% (%lld samples)", r.eval_loss, 100 * r.eval_accuracy,
                static_cast<long long>(r.eval_samples));
  if (r.reached_target) std::printf(" | target accuracy reached");
  std::printf("\n");
}

void ProgressPrinter::finish(const TrainResult& r) {
  if (!enabled_) return;
  std::printf("\nsummary: %lld steps in %s", static_cast<long long>(r.steps), duration(r.seconds).c_str());
  if (r.mean_samples_per_second > 0)
    std::printf(" | mean %.0f samples/s (warm-up excluded)", r.mean_samples_per_second);
  else
    std::printf(" | mean samples/s not measured (every step was warm-up: train.warmup_log_steps = %lld)",
                static_cast<long long>(warmup_steps_));
  if (evaluate_ && !r.epochs.empty())
    std::printf(" | final eval accuracy %.2f%% loss %.4f", 100 * r.final_eval_accuracy, r.final_eval_loss);
  std::printf(" | all-reduce exposed %.1f%% of step time (the buckets' all-reduce times add up to %.1f%% of it: "
              "they overlap backward and each other)",
              100 * r.exposed_allreduce_share, 100 * r.allreduce_total_share);
  if (r.skipped_steps > 0) std::printf(" | %lld step(s) skipped for inf/NaN", static_cast<long long>(r.skipped_steps));
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace scaletrain::train
