// data.path = "synthetic": a learnable 28x28x1, 10-class data set packed once per node by the
// data module's synthetic generator, then read through the real loader like any other file.
#include "scaletrain/train/synthetic_data.hpp"

#include <filesystem>

#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/synthetic.hpp"

namespace scaletrain::train {
namespace {
int64_t synthetic_test_samples(const RunConfig& cfg) { return std::max<int64_t>(256, cfg.synthetic_samples / 8); }
}  // namespace

std::string ensure_synthetic_dataset(const RunConfig& cfg, comm::Communicator& comm) {
  const std::filesystem::path dir = cfg.run_dir.empty() ? std::filesystem::temp_directory_path()
                                                        : std::filesystem::path(cfg.run_dir);
  const std::string path = (dir / ("synthetic-" + std::to_string(cfg.synthetic_samples) + "-" +
                                    std::to_string(cfg.seed) + ".h5"))
                               .string();
  // A run directory is assumed shared between nodes (rank 0 writes); the temp directory is
  // node-local (each node's local rank 0 writes).
  const bool writer = cfg.run_dir.empty() ? comm.local_rank() == 0 : comm.rank() == 0;
  int failed = 0;
  std::string why;
  if (writer && !std::filesystem::exists(path)) {
    try {
      std::filesystem::create_directories(dir);
      data::SyntheticOptions o;
      o.train_samples = cfg.synthetic_samples;
      o.test_samples = synthetic_test_samples(cfg);
      o.seed = cfg.seed;
      data::write_synthetic_dataset(path, o);
    } catch (const std::exception& e) {
      failed = 1;
      why = e.what();
    }
  }
  comm.allreduce(&failed, 1, DType::i32, comm::ReduceOp::max);
  if (failed) ST_FAIL(why.empty() ? "writing the synthetic data set " + path + " failed on another rank" : why);
  return path;
}

DatasetShape dataset_shape(const RunConfig& cfg) {
  if (cfg.data_path == "synthetic") return DatasetShape{Shape{28, 28, 1}, 10};
  data::DatasetFile f(cfg.data_path);
  const data::DatasetInfo info = f.info("train");
  return DatasetShape{info.sample_shape, static_cast<int64_t>(info.classes.size())};
}

}  // namespace scaletrain::train
