// Per-channel mean and standard deviation of a split's samples (the normalization the trainer
// applies), in one pass: each block of samples gets its own mean and sum of squared deviations,
// and the blocks are merged with Chan, Golub and LeVeque's pairwise update, which stays exact
// where E[x^2] - E[x]^2 loses the variance of values with a large offset.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/core/dtype.hpp"

namespace scaletrain::data {

class DatasetFile;

class ChannelStatistics {
 public:
  explicit ChannelStatistics(int64_t channels);
  // Adds `count` values laid out [..., channels] (value i belongs to channel i % channels).
  void add(const double* values, int64_t count);
  // The same for `count` values stored as the data format stores samples (u8, f16 or f32).
  void add_stored(DType dtype, const void* values, int64_t count);
  void merge(const ChannelStatistics& other);
  int64_t count() const { return n_; }  // values per channel
  int64_t channels() const { return channels_; }
  // The running state as 1 + 2 * channels doubles (count, means, sums of squared deviations), and
  // back: what MPI ranks exchange to merge their statistics.
  std::vector<double> pack() const;
  static ChannelStatistics unpack(int64_t channels, const double* packed);
  std::vector<float> mean() const;
  std::vector<float> std() const;  // population standard deviation, as the packers store it

 private:
  int64_t channels_;
  int64_t n_ = 0;
  std::vector<double> mean_, m2_;
};

// The statistics of one split of a data set file, read block by block.
ChannelStatistics split_statistics(const DatasetFile& file, const std::string& split);

// Computes the training split's statistics and stores them as its mean/std attributes (what the
// trainer normalizes with). Returns them.
ChannelStatistics add_statistics_to_file(const std::string& path);

}  // namespace scaletrain::data
