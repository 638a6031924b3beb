// NaN/inf counting in float samples (data/nonfinite_scan.hpp): every NaN and infinity of f32 and
// f16 is counted and nothing finite is (the largest finite values, subnormals, -0); the first bad
// sample is the lowest split index, whether rows are contiguous or carry their own indices; scans
// combine; uint8 samples hold none; read_part counts a split's values as staging reads it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "scaletrain/core/half.hpp"
#include "scaletrain/data/split_parts.hpp"
#include "scaletrain/data/dataset_writer.hpp"

namespace scaletrain::data {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(NonFiniteScan, CountsEveryNanAndInfinityOfF32AndNothingFinite) {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()};
  EXPECT_EQ(count_nonfinite(v.data(), DType::f32, static_cast<int64_t>(v.size())), 0);
  v.push_back(std::nanf(""));
  v.push_back(-std::nanf(""));
  v.push_back(kInf);
  v.push_back(-kInf);
  EXPECT_EQ(count_nonfinite(v.data(), DType::f32, static_cast<int64_t>(v.size())), 4);
}

TEST(NonFiniteScan, CountsEveryNanAndInfinityOfF16AndNothingFinite) {
  std::vector<f16> v;
  for (float x : {0.0f, -0.0f, 65504.0f, -65504.0f, 6.0e-8f, 1.0f}) v.push_back(float_to_f16(x));
  EXPECT_EQ(count_nonfinite(v.data(), DType::f16, static_cast<int64_t>(v.size())), 0);
  for (uint16_t bits : {0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff}) v.push_back(f16{bits});
  EXPECT_EQ(count_nonfinite(v.data(), DType::f16, static_cast<int64_t>(v.size())), 5);
}

TEST(NonFiniteScan, Uint8SamplesHoldNone) {
  const std::vector<uint8_t> v(64, 0xff);
  EXPECT_FALSE(scan_samples(v.data(), DType::u8, 4, 16, nullptr, 0).any());
}

TEST(NonFiniteScan, NamesTheLowestSampleAndCombines) {
  const int64_t rows = 6, values = 100;
  std::vector<float> x(static_cast<size_t>(rows * values), 0.5f);
  x[4 * values + 7] = std::nanf("");
  x[4 * values + 99] = kInf;
  x[1 * values + 0] = -kInf;
  const NonFiniteScan contiguous = scan_samples(x.data(), DType::f32, rows, values, nullptr, 1000);
  EXPECT_EQ(contiguous.values, 3);
  EXPECT_EQ(contiguous.first_sample, 1001);
  const std::vector<int64_t> indices = {50, 40, 30, 20, 10, 0};
  const NonFiniteScan shuffled = scan_samples(x.data(), DType::f32, rows, values, indices.data());
  EXPECT_EQ(shuffled.values, 3);
  EXPECT_EQ(shuffled.first_sample, 10) << "row 4 is sample 10, below row 1's sample 40";
  NonFiniteScan all;
  all.add(NonFiniteScan{});
  EXPECT_FALSE(all.any());
  all.add(contiguous);
  all.add(shuffled);
  EXPECT_EQ(all.values, 6);
  EXPECT_EQ(all.first_sample, 10);
}

TEST(NonFiniteScan, ReadPartCountsTheValuesOfTheRangeItReadsAcrossReads) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("st-nonfinite-" + std::to_string(::getpid()) + ".h5")).string();
  const Shape shape{64, 64, 3};  // 48 KiB samples: several reads of a range of hundreds
  const int64_t n = 600, values = shape_numel(shape);
  std::vector<float> x(static_cast<size_t>(n * values), 0.25f);
  for (int64_t bad : {90, 350, 351, 599}) x[static_cast<size_t>(bad * values + 11)] = std::nanf("");
  const std::vector<int32_t> labels(static_cast<size_t>(n), 1);
  {
    DatasetWriter w(path, {"a", "b"}, shape, DType::f32);
    w.create_split("train", n, "test");
    w.write("train", 0, n, x.data(), labels.data());
    w.finish();
  }
  const DatasetFile file(path);
  const DatasetInfo info = file.info("train");
  const RowRange range{100, 500};  // holds 350, 351 and 599, not 90
  std::vector<uint8_t> samples(file.sample_bytes("train") * static_cast<size_t>(range.count));
  std::vector<int32_t> read_labels(static_cast<size_t>(range.count));
  NonFiniteScan scan;
  read_part(file, info, range, samples.data(), read_labels.data(), &scan);
  EXPECT_EQ(scan.values, 3);
  EXPECT_EQ(scan.first_sample, 350);
  NonFiniteScan none;
  read_part(file, info, RowRange{0, 90}, samples.data(), read_labels.data(), &none);
  EXPECT_FALSE(none.any());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace scaletrain::data
