// st-info: h5info-style inspection and validation of a scaletrain dataset: format, classes,
// splits with shapes, dtypes, chunking and compression, channel statistics, a few labels.
// Float splits (f32, f16) are read through once and their NaN/inf values counted: the trainer refuses
// a split that holds any. Exit status 1 when the validator finds problems (each printed with how to
// fix it). --add-stats
// computes the training split's per-channel mean/std (one pass) and stores them in the file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "scaletrain/data/channel_statistics.hpp"
#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/nonfinite_scan.hpp"

using namespace scaletrain;

namespace {

// The split's NaN/inf values, read in blocks of about 64 MiB.
data::NonFiniteScan scan_split(const data::DatasetFile& f, const data::DatasetInfo& d) {
  data::NonFiniteScan scan;
  const int64_t values = shape_numel(d.sample_shape);
  const auto bytes = static_cast<int64_t>(static_cast<size_t>(values) * dtype_size(d.dtype));
  const int64_t per_read = std::max<int64_t>(1, (int64_t{64} << 20) / std::max<int64_t>(bytes, 1));
  std::vector<uint8_t> block;
  for (int64_t start = 0; start < d.num_samples; start += per_read) {
    const int64_t n = std::min(per_read, d.num_samples - start);
    block.resize(static_cast<size_t>(n * bytes));
    f.read_samples(d.split, start, n, block.data());
    scan.add(data::scan_samples(block.data(), d.dtype, n, values, nullptr, start));
  }
  return scan;
}

void print_nonfinite(const data::DatasetFile& f, const data::DatasetInfo& d) {
  if (d.dtype != DType::f32 && d.dtype != DType::f16) return;
  const data::NonFiniteScan s = scan_split(f, d);
  if (!s.any()) {
    std::printf("  non-finite values (NaN, inf): none\n");
    return;
  }
  std::printf("  non-finite values (NaN, inf): %lld, the first in sample %lld: the trainer refuses this split; "
              "replace or drop those samples\n",
              static_cast<long long>(s.values), static_cast<long long>(s.first_sample));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Inspect and validate a scaletrain HDF5 dataset"};
  std::string path;
  int64_t show = 8;
  bool add_stats = false;
  app.add_option("file", path, "the HDF5 dataset")->required();
  app.add_flag("--add-stats", add_stats,
               "compute the training split's per-channel mean/std (what the trainer normalizes with) and store them "
               "in the file");
  app.add_option("--labels", show, "labels to show per split")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto problems = data::validate_dataset(path, {});
    if (!problems.empty()) {
      std::fprintf(stderr, "st-info: %s is not a valid scaletrain dataset:\n", path.c_str());
      for (const auto& p : problems) std::fprintf(stderr, "  - %s\n", p.c_str());
      return 1;
    }
    if (add_stats) {
      const data::ChannelStatistics stats = data::add_statistics_to_file(path);
      std::printf("%s: stored the mean/std of %lld values per channel of split train\n", path.c_str(),
                  static_cast<long long>(stats.count()));
    }
    data::DatasetFile f(path, {});
    std::printf("%s: scaletrain-dataset version %lld\n", path.c_str(), static_cast<long long>(data::kFormatVersion));
    bool first = true;
    for (const auto& split : f.splits()) {
      const data::DatasetInfo d = f.info(split);
      if (first) {
        std::printf("classes (%zu):", d.classes.size());
        for (const auto& c : d.classes) std::printf(" '%s'", c.c_str());
        std::printf("\nsample shape: [");
        for (size_t i = 0; i < d.sample_shape.size(); ++i) std::printf("%s%lld", i ? ", " : "", static_cast<long long>(d.sample_shape[i]));
        std::printf("] %s\n", std::string(dtype_name(d.dtype)).c_str());
        first = false;
      }
      std::printf("split %-5s %9lld samples  chunk %lld samples  compression %s  source '%s'\n", split.c_str(),
                  static_cast<long long>(d.num_samples), static_cast<long long>(d.chunk_samples), d.compression.c_str(),
                  d.source.c_str());
      if (split == "train" && !d.mean.empty()) {
        std::printf("  mean/std per channel:");
        for (size_t c = 0; c < d.mean.size(); ++c) std::printf(" %.3f/%.3f", d.mean[c], d.std[c]);
        std::printf("\n");
      } else if (split == "train") {
        std::printf("  mean/std per channel: none: the trainer refuses this file unless data.normalize = none; "
                    "st-info --add-stats %s adds them\n", path.c_str());
      }
      print_nonfinite(f, d);
      const int64_t n = std::min(show, d.num_samples);
      std::vector<int32_t> labels(static_cast<size_t>(n));
      f.read_labels(split, 0, n, labels.data());
      std::printf("  first labels:");
      for (int32_t l : labels) std::printf(" %d", l);
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "st-info: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
