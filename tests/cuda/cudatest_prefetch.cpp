// The staged prefetch ring on a GPU: data::DataLoader with the CUDA backend (pinned host slots,
// copies on the copy stream, the compute stream waiting on each batch's event) yields every sample
// once per epoch, in both loader modes, and each device batch downloads equal to its host batch and
// to the file; the copies' device-timed records are ordered.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/data/synthetic.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

class CudaPrefetch : public CudaTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped()) return;
    path_ = (std::filesystem::temp_directory_path() / ("st-cuda-prefetch-" + std::to_string(getpid()) + ".h5")).string();
    data::SyntheticOptions o;
    o.sample_shape = {6, 5, 3};
    o.train_samples = 1003;  // prime: batches never divide it
    o.test_samples = 10;
    o.classes = 7;
    o.seed = 5;
    data::write_synthetic_dataset(path_, o);
  }
  void TearDown() override {
    CudaTest::TearDown();
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  std::string path_;
};

// Checks one batch on the device against the host batch and the file; returns its sample indices.
void check_batch(Backend& b, const data::Batch& batch, const data::DatasetFile& f, int64_t rows) {
  b.compute_stream().wait(*batch.copied);  // as the trainer's consumer does
  const Tensor samples = b.download(batch.device_samples);
  const Tensor labels = b.download(batch.device_labels);
  const Tensor indices = b.download(batch.device_indices);
  EXPECT_EQ(batch.device_samples.device(), Device::cuda);
  ASSERT_EQ(std::memcmp(samples.raw(), batch.samples.raw(), samples.bytes()), 0) << "device samples, step "
                                                                                << batch.step_in_epoch;
  ASSERT_EQ(std::memcmp(labels.raw(), batch.labels.raw(), labels.bytes()), 0) << "device labels";
  const size_t sb = f.sample_bytes("train");
  std::vector<uint8_t> row(sb);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t idx = batch.indices[static_cast<size_t>(r)];
    ASSERT_EQ(indices.data<int64_t>()[r], idx) << "device indices";
    f.read_samples("train", idx, 1, row.data());
    ASSERT_EQ(std::memcmp(row.data(), static_cast<const uint8_t*>(samples.raw()) + static_cast<size_t>(r) * sb, sb), 0)
        << "sample " << idx << " on the device differs from the file";
  }
}

TEST_P(CudaPrefetch, EverySampleOncePerEpochAndDeviceBatchesEqualHostBatches) {
  Backend& b = *backend;
  data::DatasetFile f(path_);
  data::LoaderOptions o;
  o.path = path_;
  o.batch = 16;
  o.prefetch = 3;
  o.mode = data::parse_loader_mode(GetParam());
  o.shuffle_buffer = 50;
  o.backend = &b;
  data::DataLoader loader(o, 0, 1);
  ASSERT_EQ(loader.steps_per_epoch(), 1003 / 16);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch);
    std::map<int64_t, int> seen;
    int64_t steps = 0;
    while (const data::Batch* batch = loader.next()) {
      EXPECT_EQ(batch->step_in_epoch, steps++);
      check_batch(b, *batch, f, o.batch);
      for (int64_t r = 0; r < o.batch; ++r) ++seen[batch->indices[static_cast<size_t>(r)]];
      loader.release(batch);
    }
    loader.end_epoch();
    EXPECT_EQ(steps, loader.steps_per_epoch());
    EXPECT_EQ(static_cast<int64_t>(seen.size()), steps * o.batch) << "a sample was read twice in epoch " << epoch;
    for (const auto& [i, c] : seen) ASSERT_TRUE(i >= 0 && i < 1003 && c == 1) << "sample " << i << " x" << c;
    const auto copies = loader.take_copy_records();
    EXPECT_EQ(static_cast<int64_t>(copies.size()), steps);
    for (const auto& c : copies) EXPECT_GE(c.end, c.start) << "copy of step " << c.step_in_epoch;
  }
  EXPECT_GT(b.memory_in_use(), 0) << "the ring's device slots";
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaPrefetch, ::testing::Values("stage", "stream"),
                         [](const auto& info) { return info.param; });

}  // namespace
