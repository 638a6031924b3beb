// The dataset format's reader, writer and validator: a written file reads back byte for byte with
// its statistics, and every kind of bad file is rejected by the loader with a message that names
// the file and what is wrong.
// GCC 12 reports a false -Wrestrict on std::string operator+ at -O3 (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "scaletrain/core/error.hpp"
#include "scaletrain/data/channel_statistics.hpp"
#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/dataset_writer.hpp"
#include "scaletrain/data/hdf5_handles.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/data/sharding.hpp"

using namespace scaletrain;
namespace fs = std::filesystem;

namespace {

class DataFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("st-format-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A small valid file: train (n samples of 4x3x2 u8) and test splits, labels i % classes.
  std::string write_valid(const std::string& name, int64_t n = 50, int classes = 5) {
    const std::string p = path(name);
    std::vector<std::string> names;
    for (int c = 0; c < classes; ++c) names.push_back("c" + std::to_string(c));
    data::DatasetWriter w(p, names, Shape{4, 3, 2}, DType::u8, data::WriterOptions{64, 0});
    for (const char* split : {"train", "test"}) {
      std::vector<uint8_t> s(static_cast<size_t>(n * 24));
      std::vector<int32_t> l(static_cast<size_t>(n));
      for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>((i * 7 + (split[1] == 'r' ? 0 : 3)) % 251);
      for (int64_t i = 0; i < n; ++i) l[static_cast<size_t>(i)] = static_cast<int32_t>(i % classes);
      w.create_split(split, n, "test data");
      w.write(split, 0, n / 2, s.data(), l.data());
      w.write(split, n / 2, n - n / 2, s.data() + (n / 2) * 24, l.data() + n / 2);
      if (split[1] == 'r') w.store_statistics("train");
    }
    w.finish();
    return p;
  }

  // Expects that opening a loader on `file` throws an Error whose message names the file and
  // matches `what`.
  void expect_rejected(const std::string& file, const std::string& what, const std::string& split = "train") {
    data::LoaderOptions o;
    o.path = file;
    o.split = split;
    o.batch = 4;
    try {
      data::DataLoader l(o, 0, 1);
      ADD_FAILURE() << file << " was accepted; expected: " << what;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << "message does not name the file: " << msg;
      EXPECT_TRUE(std::regex_search(msg, std::regex(what))) << "message: " << msg << "\nexpected /" << what << "/";
    }
  }

  fs::path dir_;
};

TEST_F(DataFormat, WrittenFileReadsBackWithStatistics) {
  const std::string p = write_valid("ok.h5", 50);
  EXPECT_FALSE(fs::exists(p + ".tmp." + std::to_string(getpid()))) << "temporary file left behind";
  EXPECT_TRUE(data::validate_dataset(p, {"train", "test"}).empty());
  data::DatasetFile f(p);
  const data::DatasetInfo d = f.info("train");
  EXPECT_EQ(d.num_samples, 50);
  EXPECT_EQ(d.sample_shape, (Shape{4, 3, 2}));
  EXPECT_EQ(d.dtype, DType::u8);
  EXPECT_EQ(d.classes.size(), 5u);
  EXPECT_EQ(d.chunk_samples, 2);  // 64-byte chunks of 24-byte samples
  std::vector<uint8_t> s(50 * 24);
  f.read_samples("train", 0, 50, s.data());
  double sum[2] = {0, 0}, sq[2] = {0, 0};
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_EQ(s[i], static_cast<uint8_t>((i * 7) % 251)) << "byte " << i;
    sum[i % 2] += s[i];
    sq[i % 2] += static_cast<double>(s[i]) * s[i];
  }
  ASSERT_EQ(d.mean.size(), 2u);
  for (int c = 0; c < 2; ++c) {
    const double m = sum[c] / 600, sd = std::sqrt(sq[c] / 600 - m * m);
    EXPECT_NEAR(d.mean[static_cast<size_t>(c)], m, 1e-3);
    EXPECT_NEAR(d.std[static_cast<size_t>(c)], sd, 1e-3);
  }
  // The test split reports the training statistics.
  EXPECT_EQ(f.info("test").mean, d.mean);
}

TEST_F(DataFormat, UnfinishedWriterLeavesNothing) {
  const std::string p = path("never.h5");
  {
    data::DatasetWriter w(p, {"a"}, Shape{2}, DType::f32);
    w.create_split("train", 3, "x");
  }
  EXPECT_FALSE(fs::exists(p));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(DataFormat, MissingFileIsRejected) { expect_rejected(path("nope.h5"), "no such file"); }

TEST_F(DataFormat, NonHdf5FileIsRejected) {
  std::ofstream(path("text.h5")) << "this is not HDF5\n";
  expect_rejected(path("text.h5"), "not an HDF5 file");
}

TEST_F(DataFormat, OtherHdf5FormatIsRejected) {
  const std::string p = path("other.h5");
  hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  data::write_string_attr(f, "creator", "someone else");
  H5Fclose(f);
  expect_rejected(p, "not a scaletrain dataset");
}

TEST_F(DataFormat, WrongFormatNameAndVersionAreRejected) {
  const std::string a = write_valid("fmt.h5"), b = write_valid("ver.h5");
  hid_t f = H5Fopen(a.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  data::write_string_attr(f, "format", "keras-dataset");
  H5Fclose(f);
  expect_rejected(a, "format attribute is 'keras-dataset'");
  f = H5Fopen(b.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  data::write_int_attr(f, "version", 7);
  H5Fclose(f);
  expect_rejected(b, "format version 7 is not supported");
}

TEST_F(DataFormat, MissingSplitIsRejected) {
  const std::string p = write_valid("split.h5");
  expect_rejected(p, "missing split 'val' \\(the file has: train, test\\)", "val");
}

TEST_F(DataFormat, LabelOutOfRangeIsRejected) {
  const std::string p = write_valid("labels.h5");
  hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "/train/labels", H5P_DEFAULT);
  hid_t fs_ = H5Dget_space(d);
  hsize_t off = 17, cnt = 1;
  H5Sselect_hyperslab(fs_, H5S_SELECT_SET, &off, nullptr, &cnt, nullptr);
  hid_t ms = H5Screate_simple(1, &cnt, nullptr);
  const int32_t bad = 9;
  H5Dwrite(d, H5T_NATIVE_INT32, ms, fs_, H5P_DEFAULT, &bad);
  H5Sclose(ms);
  H5Sclose(fs_);
  H5Dclose(d);
  H5Fclose(f);
  expect_rejected(p, "label 9 at index 17, outside \\[0, 5\\)");
}

TEST_F(DataFormat, TruncatedFileIsRejected) {
  const std::string p = write_valid("full.h5", 400);
  const std::string t = path("truncated.h5");
  fs::copy_file(p, t);
  fs::resize_file(t, fs::file_size(p) / 2);
  expect_rejected(t, "truncated or corrupt");
}

TEST_F(DataFormat, ValidatorListsEveryProblem) {
  const std::string p = write_valid("two.h5");
  const auto problems = data::validate_dataset(p, {"train", "val"});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("missing split 'val'"), std::string::npos);
}

TEST(ShardPlan, DropAndPadCounts) {
  const auto d = data::make_shard_plan(1003, 3, 8, true);
  EXPECT_EQ(d.steps_per_epoch, 41);  // 1003 / 24
  const auto p = data::make_shard_plan(1003, 3, 8, false);
  EXPECT_EQ(p.steps_per_epoch, 42);
  int64_t valid = 0;
  for (int r = 0; r < 3; ++r)
    for (int64_t s = 0; s < p.steps_per_epoch; ++s) valid += data::valid_rows(p, r, s);
  EXPECT_EQ(valid, 1003);
}

TEST(ShardPlan, PermutationIsAPermutationAndDeterministic) {
  const auto a = data::epoch_permutation(1000, 1, 0), b = data::epoch_permutation(1000, 1, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, data::epoch_permutation(1000, 1, 1));
  auto s = a;
  std::sort(s.begin(), s.end());
  for (int64_t i = 0; i < 1000; ++i) EXPECT_EQ(s[static_cast<size_t>(i)], i);
  EXPECT_EQ(data::epoch_permutation(5, 1, 0, false), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

// The statistics merged block by block equal one pass over everything (two-pass reference), also
// for values around 1e8 whose spread is 0.5, where E[x^2] - E[x]^2 in double keeps no digit of it.
TEST(ChannelStatistics, BlocksMergedEqualTheWholeAtALargeOffset) {
  std::vector<double> v;
  for (int i = 0; i < 3000; ++i) v.push_back(1e8 + 0.5 * std::sin(0.37 * i) + (i % 2 ? 0.0 : 100.0));
  double mean[2] = {0, 0}, m2[2] = {0, 0};
  for (size_t i = 0; i < v.size(); ++i) mean[i % 2] += v[i] / 1500.0;
  for (size_t i = 0; i < v.size(); ++i) m2[i % 2] += (v[i] - mean[i % 2]) * (v[i] - mean[i % 2]);
  data::ChannelStatistics merged(2);
  for (size_t start = 0; start < v.size(); start += 14) merged.add(v.data() + start, std::min<int64_t>(14, static_cast<int64_t>(v.size() - start)));
  ASSERT_EQ(merged.count(), 1500);
  for (int c = 0; c < 2; ++c) {
    EXPECT_FLOAT_EQ(merged.mean()[static_cast<size_t>(c)], static_cast<float>(mean[c]));
    EXPECT_NEAR(merged.std()[static_cast<size_t>(c)], std::sqrt(m2[c] / 1500.0), 1e-6);
  }
  EXPECT_GT(merged.std()[0], 0.3f);
  EXPECT_THROW(merged.add(v.data(), 3), Error) << "3 values are not whole samples of 2 channels";
}

}  // namespace
