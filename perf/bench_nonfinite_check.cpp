// bench_nonfinite_check: what counting NaN/inf costs stage mode. The staging read of a whole split
// (data::read_part, as every stage mode calls it) with the count, against the same read without it,
// alternating, best of --repeats, on a float split of about 1 GB (f32 and f16 files, synthetic; or
// --file). Warm: the file in the page cache (the fastest read, so the largest share for the count);
// cold: its pages written back and dropped before each read (data/page_cache.hpp). Into fresh
// memory for each read, as staging allocates it, and into one reused buffer (no page faults).
//   bench_nonfinite_check [--file F.h5] [--gb 1] [--dtypes f32,f16] [--repeats 5]
#include <mpi.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/page_cache.hpp"
#include "scaletrain/data/split_parts.hpp"
#include "scaletrain/data/synthetic.hpp"

using namespace scaletrain;

namespace {

std::string synthetic_file(const std::string& dtype, double gb) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("st-bench-nonfinite-" + std::to_string(getpid()) + "-" + dtype + ".h5"))
                               .string();
  data::SyntheticOptions o;
  o.sample_shape = {64, 64, 3};
  o.dtype = parse_dtype(dtype);
  o.train_samples = static_cast<int64_t>(gb * 1e9 / static_cast<double>(64 * 64 * 3 * dtype_size(o.dtype)));
  o.test_samples = 0;
  data::write_synthetic_dataset(path, o);
  return path;
}

struct Timing {
  double with = 1e30, without = 1e30;
};

// Best of `repeats` reads of the whole split with and without the count, alternating.
Timing time_staging(const std::string& path, int repeats, bool cold, bool fresh, int64_t* bytes) {
  const data::DatasetFile file(path);
  const data::DatasetInfo info = file.info("train");
  const size_t split_bytes = file.sample_bytes("train") * static_cast<size_t>(info.num_samples);
  std::vector<int32_t> labels(static_cast<size_t>(info.num_samples));
  const data::RowRange all{0, info.num_samples};
  std::unique_ptr<uint8_t[]> reused(fresh ? nullptr : new uint8_t[split_bytes]);
  Timing t;
  for (int r = 0; r <= repeats; ++r) {  // the first round warms up (touches the buffers, fills the cache)
    for (const bool count : {true, false}) {
      if (cold) data::drop_from_page_cache(path);
      data::NonFiniteScan scan;
      const double t0 = now_seconds();
      const std::unique_ptr<uint8_t[]> samples(fresh ? new uint8_t[split_bytes] : nullptr);  // as staging gets
      *bytes = data::read_part(file, info, all, fresh ? samples.get() : reused.get(), labels.data(),
                               count ? &scan : nullptr);
      const double s = now_seconds() - t0;
      if (r == 0) continue;
      (count ? t.with : t.without) = std::min(count ? t.with : t.without, s);
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  CLI::App app{"Stage mode's NaN/inf count: the staging read with and without it"};
  std::string file;
  double gb = 1.0;
  std::vector<std::string> dtypes{"f32", "f16"};
  int repeats = 5;
  app.add_option("--file", file, "an existing float dataset (default: synthetic ones in the temp directory)");
  app.add_option("--gb", gb, "size of each synthetic training split, GB")->capture_default_str();
  app.add_option("--dtypes", dtypes, "stored types of the synthetic files (f32, f16)")->delimiter(',');
  app.add_option("--repeats", repeats, "timed reads of each kind (best is reported)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> files{file}, made;
  if (file.empty()) {
    files.clear();
    for (const std::string& d : dtypes) made.push_back(synthetic_file(d, gb)), files.push_back(made.back());
  }
  std::printf("%-5s %8s %-5s %-6s %12s %12s %10s %9s\n", "dtype", "split GB", "cache", "memory", "with s",
              "without s", "GB/s with", "overhead");
  for (const std::string& path : files) {
    const data::DatasetInfo info = data::DatasetFile(path).info("train");
    for (const bool fresh : {true, false})
      for (const bool cold : {false, true}) {
        int64_t bytes = 0;
        const Timing t = time_staging(path, repeats, cold, fresh, &bytes);
        std::printf("%-5s %8.2f %-5s %-6s %12.3f %12.3f %10.2f %8.1f%%\n", std::string(dtype_name(info.dtype)).c_str(),
                    static_cast<double>(bytes) / 1e9, cold ? "cold" : "warm", fresh ? "fresh" : "reused", t.with,
                    t.without, static_cast<double>(bytes) / 1e9 / t.with, 100.0 * (t.with / t.without - 1.0));
      }
  }
  std::printf("\nwith/without: data::read_part of the whole training split with and without the NaN/inf count, best of "
              "%d each, alternating; overhead = with / without - 1. memory: fresh pages for each read (as staging "
              "allocates them: page faults included), or one buffer reused (no faults: the count's largest share).\n",
              repeats);
  for (const std::string& p : made) std::filesystem::remove(p);
  MPI_Finalize();
  return 0;
}
