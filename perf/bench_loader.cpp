// bench_loader: the data loader's throughput, stage and stream, in samples/s and MB/s, beside the
// raw sequential read speed of the same file measured in the same run (cold: pages dropped from
// the page cache with posix_fadvise; warm: cached). Also a consumer that spends a fixed time per
// batch, as a model step would, to show how much of that step the loader makes it wait.
//   bench_loader [--file F.h5] [--samples 20000] [--shape 64,64,3] [--batch 256] [--step-ms 5]
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/data/synthetic.hpp"

using namespace scaletrain;

namespace {

void drop_cache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

double raw_read_mb_s(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  std::vector<char> buf(8 << 20);
  const Stopwatch clock;
  size_t total = 0;
  for (ssize_t n; (n = read(fd, buf.data(), buf.size())) > 0;) total += static_cast<size_t>(n);
  close(fd);
  return static_cast<double>(total) / 1e6 / clock.seconds();
}

struct EpochResult {
  double samples_per_s, mb_per_s, wait_share;
};

// One epoch; the consumer spends step_ms per batch (busy) as a model step would.
EpochResult run_epoch(data::DataLoader& l, int64_t epoch, double step_ms) {
  l.reset_stats();
  l.start_epoch(epoch);
  const Stopwatch clock;
  int64_t samples = 0;
  double wait = 0;
  for (;;) {
    const double t0 = now_seconds();
    const data::Batch* b = l.next();
    wait += now_seconds() - t0;
    if (!b) break;
    samples += l.options().batch;
    const double until = now_seconds() + step_ms / 1e3;
    volatile uint64_t sink = 0;
    while (now_seconds() < until) sink = sink + static_cast<const uint8_t*>(b->samples.raw())[0];
    l.release(b);
  }
  const double s = clock.seconds();
  const double sample_bytes =
      static_cast<double>(shape_numel(l.info().sample_shape)) * static_cast<double>(dtype_size(l.info().dtype));
  const double bytes = static_cast<double>(samples) * sample_bytes;
  return {static_cast<double>(samples) / s, bytes / 1e6 / s, wait / s};
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"Loader throughput (stage, stream) beside the file's raw read speed"};
  std::string file;
  int64_t samples = 20000, batch = 256;
  std::vector<int64_t> shape{64, 64, 3};
  double step_ms = 5.0;
  app.add_option("--file", file, "an existing dataset (default: a synthetic one in the temp directory)");
  app.add_option("--samples", samples, "samples of the synthetic dataset")->capture_default_str();
  app.add_option("--shape", shape, "sample shape of the synthetic dataset")->delimiter(',');
  app.add_option("--batch", batch, "batch size")->capture_default_str();
  app.add_option("--step-ms", step_ms, "simulated model step per batch for the data-wait measurement")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  bool made = false;
  if (file.empty()) {
    file = (std::filesystem::temp_directory_path() / ("st-bench-loader-" + std::to_string(getpid()) + ".h5")).string();
    data::SyntheticOptions o;
    o.sample_shape = Shape(shape.begin(), shape.end());
    o.train_samples = samples;
    o.test_samples = 0;
    data::write_synthetic_dataset(file, o);
    made = true;
  }
  const double file_mb = static_cast<double>(std::filesystem::file_size(file)) / 1e6;
  drop_cache(file);
  const double cold = raw_read_mb_s(file);
  const double warm = raw_read_mb_s(file);
  std::printf("file %s: %.1f MB; raw sequential read %.0f MB/s cold, %.0f MB/s warm (page cache)\n\n", file.c_str(),
              file_mb, cold, warm);
  std::printf("%-8s %-6s %12s %10s %14s %12s %22s\n", "mode", "cache", "samples/s", "MB/s", "x raw (same)",
              "load s", "wait share @ step-ms");
  for (const char* mode : {"stage", "stream"}) {
    for (const bool cold_cache : {true, false}) {
      if (cold_cache) drop_cache(file);
      data::LoaderOptions o;
      o.path = file;
      o.batch = batch;
      o.mode = data::parse_loader_mode(mode);
      const Stopwatch open_clock;
      data::DataLoader l(o, 0, 1);
      const double load_s = open_clock.seconds();
      const EpochResult free_run = run_epoch(l, 0, 0.0);
      const EpochResult stepped = run_epoch(l, 1, step_ms);
      // Stage mode: the bytes come off disk in the initial load; the epoch then runs from memory.
      const double mb_s = std::string(mode) == "stage" ? file_mb / load_s : free_run.mb_per_s;
      std::printf("%-8s %-6s %12.0f %10.0f %14.2f %12.2f %21.2f%%\n", mode, cold_cache ? "cold" : "warm",
                  free_run.samples_per_s, mb_s, mb_s / (cold_cache ? cold : warm), load_s, 100 * stepped.wait_share);
    }
  }
  std::printf("\nsamples/s and MB/s: one epoch consumed as fast as possible (stage: MB/s of the initial load).\n"
              "wait share: time next() blocked / epoch time when each batch is followed by %.1f ms of work.\n",
              step_ms);
  if (made) std::filesystem::remove(file);
  MPI_Finalize();
  return 0;
}
