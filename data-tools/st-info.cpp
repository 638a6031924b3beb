// st-info: h5info-style inspection and validation of a scaletrain dataset: format, classes,
// splits with shapes, dtypes, chunking and compression, channel statistics, a few labels.
// Exit status 1 when the validator finds problems (each printed with how to fix it). --add-stats
// computes the training split's per-channel mean/std (one pass) and stores them in the file.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "scaletrain/data/channel_statistics.hpp"
#include "scaletrain/data/dataset_file.hpp"

using namespace scaletrain;

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
