// bench_loader: the data loader's throughput, stage and stream, in samples/s and MB/s, beside the
// raw sequential read speed of the same file measured in the same run (cold: pages dropped from
// the page cache with posix_fadvise; warm: cached). Also a consumer that spends a fixed time per
// batch, as a model step would, to show how much of that step the loader makes it wait, and the
// input pipeline's time per batch on the cpu backend (normalization to f32). Without --file, one
// synthetic file per --dtypes entry (the same samples stored as uint8, f16 or f32), so the stored
// types compare side by side in one run.
//   bench_loader [--file F.h5] [--samples 20000] [--shape 64,64,3] [--dtypes u8,f32] [--batch 256] [--step-ms 5]
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
#include "scaletrain/data/input_pipeline.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/data/page_cache.hpp"
#include "scaletrain/data/synthetic.hpp"

using namespace scaletrain;

namespace {

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

// The input pipeline (normalize to f32, no augmentation) on the cpu backend: ms per batch over one
// epoch of the staged loader.
double prepare_ms_per_batch(const std::string& file, int64_t batch) {
  auto backend = make_cpu_backend();
  data::LoaderOptions o;
  o.path = file;
  o.batch = batch;
  o.backend = backend.get();
  data::DataLoader l(o, 0, 1);
  data::InputOptions io;
  io.source = file;
  io.sample_shape = l.info().sample_shape;
  io.stored = l.info().dtype;
  io.batch = batch;
  io.mean = l.info().mean;
  io.std = l.info().std;
  data::InputPipeline input(*backend, io);
  Tensor step = backend->zeros({1}, DType::f64, "step");  // augmentation is off: never read
  l.start_epoch(0);
  double seconds = 0;
  int64_t batches = 0;
  while (const data::Batch* b = l.next()) {
    const double t0 = now_seconds();
    input.prepare(*b, step.device_data<double>(), true);
    backend->compute_stream().synchronize();
    seconds += now_seconds() - t0;
    ++batches;
    l.release(b);
  }
  l.end_epoch();
  return batches > 0 ? 1e3 * seconds / static_cast<double>(batches) : 0.0;
}

// The table's rows for one file; returns the warm stage row's samples/s for the ratio to uint8.
double bench_file(const std::string& file, int64_t batch, double step_ms) {
  const double file_mb = static_cast<double>(std::filesystem::file_size(file)) / 1e6;
  data::drop_from_page_cache(file);
  const double cold = raw_read_mb_s(file);
  const double warm = raw_read_mb_s(file);
  const double prepare_ms = prepare_ms_per_batch(file, batch);
  double warm_stage = 0;
  std::string dtype;
  for (const char* mode : {"stage", "stream"}) {
    for (const bool cold_cache : {true, false}) {
      if (cold_cache) data::drop_from_page_cache(file);
      data::LoaderOptions o;
      o.path = file;
      o.batch = batch;
      o.mode = data::parse_loader_mode(mode);
      const Stopwatch open_clock;
      data::DataLoader l(o, 0, 1);
      const double load_s = open_clock.seconds();
      const EpochResult free_run = run_epoch(l, 0, 0.0);
      const EpochResult stepped = run_epoch(l, 1, step_ms);
      dtype = dtype_name(l.info().dtype);
      // Stage mode: the bytes come off disk in the initial load; the epoch then runs from memory.
      const bool stage = std::string(mode) == "stage";
      const double mb_s = stage ? file_mb / load_s : free_run.mb_per_s;
      if (stage && !cold_cache) warm_stage = free_run.samples_per_s;
      std::printf("%-5s %7.1f %-7s %-6s %12.0f %10.0f %10.2f %9.2f %10.2f%% %12.3f\n", dtype.c_str(), file_mb, mode,
                  cold_cache ? "cold" : "warm", free_run.samples_per_s, mb_s, mb_s / (cold_cache ? cold : warm),
                  load_s, 100 * stepped.wait_share, prepare_ms);
    }
  }
  std::printf("%-5s raw sequential read of the file: %.0f MB/s cold, %.0f MB/s warm (page cache)\n", dtype.c_str(),
              cold, warm);
  return warm_stage;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"Loader throughput (stage, stream) beside the file's raw read speed"};
  std::string file;
  int64_t samples = 20000, batch = 256;
  std::vector<int64_t> shape{64, 64, 3};
  std::vector<std::string> dtypes{"u8", "f32"};
  double step_ms = 5.0;
  app.add_option("--file", file, "an existing dataset (default: synthetic ones in the temp directory)");
  app.add_option("--samples", samples, "samples of the synthetic dataset")->capture_default_str();
  app.add_option("--shape", shape, "sample shape of the synthetic dataset")->delimiter(',');
  app.add_option("--dtypes", dtypes, "stored types of the synthetic datasets (u8, f16, f32)")->delimiter(',');
  app.add_option("--batch", batch, "batch size")->capture_default_str();
  app.add_option("--step-ms", step_ms, "simulated model step per batch for the data-wait measurement")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> files{file}, made;
  if (file.empty()) {
    files.clear();
    for (const std::string& d : dtypes) {
      const std::string path = (std::filesystem::temp_directory_path() /
                                ("st-bench-loader-" + std::to_string(getpid()) + "-" + d + ".h5")).string();
      data::SyntheticOptions o;
      o.sample_shape = Shape(shape.begin(), shape.end());
      o.train_samples = samples;
      o.test_samples = 0;
      o.dtype = d == "u8" ? DType::u8 : d == "f16" ? DType::f16 : DType::f32;
      data::write_synthetic_dataset(path, o);
      files.push_back(path);
      made.push_back(path);
    }
  }
  std::printf("%-5s %7s %-7s %-6s %12s %10s %10s %9s %11s %12s\n", "dtype", "file MB", "mode", "cache", "samples/s",
              "MB/s", "x raw", "load s", "wait share", "prepare ms");
  std::vector<double> warm_stage;
  for (const std::string& f : files) warm_stage.push_back(bench_file(f, batch, step_ms));
  for (size_t k = 1; k < files.size(); ++k)
    std::printf("stage, warm: %s samples/s = %.2f x %s's\n", dtypes[k].c_str(), warm_stage[k] / warm_stage[0],
                dtypes[0].c_str());
  std::printf("\nsamples/s and MB/s: one epoch consumed as fast as possible (stage: MB/s of the initial load).\n"
              "x raw: MB/s / the file's raw sequential read (cold or warm). load s: opening, and staging in stage mode.\n"
              "wait share: time next() blocked / epoch time when each batch is followed by %.1f ms of work.\n"
              "prepare ms: the input pipeline (normalize to f32) per batch of %lld on the cpu backend.\n",
              step_ms, static_cast<long long>(batch));
  for (const std::string& f : made) std::filesystem::remove(f);
  MPI_Finalize();
  return 0;
}
