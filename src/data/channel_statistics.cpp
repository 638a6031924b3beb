// Per-channel statistics of a split, merged block by block (data/channel_statistics.hpp).
#include "scaletrain/data/channel_statistics.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/hdf5_handles.hpp"

namespace scaletrain::data {
namespace {

constexpr int64_t kBlockBytes = int64_t{16} << 20;

// `count` stored values (u8, f16 or f32) as doubles.
void widen(DType dtype, const void* raw, int64_t count, std::vector<double>& out) {
  ST_CHECK(dtype == DType::u8 || dtype == DType::f16 || dtype == DType::f32, "statistics of ", dtype_name(dtype),
           " values");
  out.resize(static_cast<size_t>(count));
  for (size_t k = 0; k < out.size(); ++k) {
    if (dtype == DType::u8) out[k] = static_cast<const uint8_t*>(raw)[k];
    else if (dtype == DType::f32) out[k] = static_cast<const float*>(raw)[k];
    else out[k] = f16_to_float(f16{static_cast<const uint16_t*>(raw)[k]});
  }
}

}  // namespace

ChannelStatistics::ChannelStatistics(int64_t channels)
    : channels_(channels), mean_(static_cast<size_t>(channels), 0.0), m2_(static_cast<size_t>(channels), 0.0) {
  ST_CHECK(channels > 0, "channel statistics need at least one channel");
}

void ChannelStatistics::add(const double* values, int64_t count) {
  ST_CHECK(count % channels_ == 0, count, " values do not fill whole samples of ", channels_, " channels");
  const int64_t per_channel = count / channels_;
  if (per_channel == 0) return;
  ChannelStatistics block(channels_);
  block.n_ = per_channel;
  for (int64_t i = 0; i < count; ++i) block.mean_[static_cast<size_t>(i % channels_)] += values[i];
  for (double& m : block.mean_) m /= static_cast<double>(per_channel);
  for (int64_t i = 0; i < count; ++i) {
    const double d = values[i] - block.mean_[static_cast<size_t>(i % channels_)];
    block.m2_[static_cast<size_t>(i % channels_)] += d * d;
  }
  merge(block);
}

void ChannelStatistics::add_stored(DType dtype, const void* values, int64_t count) {
  std::vector<double> wide;
  widen(dtype, values, count, wide);
  add(wide.data(), count);
}

void ChannelStatistics::merge(const ChannelStatistics& other) {
  ST_CHECK(other.channels_ == channels_, "merging statistics of ", other.channels_, " channels into ", channels_);
  if (other.n_ == 0) return;
  const double na = static_cast<double>(n_), nb = static_cast<double>(other.n_), n = na + nb;
  for (size_t c = 0; c < mean_.size(); ++c) {
    const double delta = other.mean_[c] - mean_[c];
    mean_[c] += delta * nb / n;
    m2_[c] += other.m2_[c] + delta * delta * na * nb / n;
  }
  n_ += other.n_;
}

std::vector<double> ChannelStatistics::pack() const {
  std::vector<double> out{static_cast<double>(n_)};
  out.insert(out.end(), mean_.begin(), mean_.end());
  out.insert(out.end(), m2_.begin(), m2_.end());
  return out;
}

ChannelStatistics ChannelStatistics::unpack(int64_t channels, const double* packed) {
  ChannelStatistics s(channels);
  s.n_ = static_cast<int64_t>(packed[0]);
  const auto c = static_cast<size_t>(channels);
  s.mean_.assign(packed + 1, packed + 1 + c);
  s.m2_.assign(packed + 1 + c, packed + 1 + 2 * c);
  return s;
}

std::vector<float> ChannelStatistics::mean() const { return {mean_.begin(), mean_.end()}; }

std::vector<float> ChannelStatistics::std() const {
  std::vector<float> out;
  for (double m2 : m2_) out.push_back(static_cast<float>(n_ > 0 ? std::sqrt(m2 / static_cast<double>(n_)) : 0.0));
  return out;
}

ChannelStatistics split_statistics(const DatasetFile& file, const std::string& split) {
  const DatasetInfo info = file.info(split);
  const int64_t sample_values = shape_numel(info.sample_shape);
  const size_t sample_bytes = file.sample_bytes(split);
  const int64_t block = std::max<int64_t>(1, kBlockBytes / static_cast<int64_t>(sample_bytes));
  ChannelStatistics stats(info.sample_shape.back());
  std::vector<uint8_t> raw;
  for (int64_t start = 0; start < info.num_samples; start += block) {
    const int64_t n = std::min(block, info.num_samples - start);
    raw.resize(static_cast<size_t>(n) * sample_bytes);
    file.read_samples(split, start, n, raw.data());
    stats.add_stored(info.dtype, raw.data(), n * sample_values);
  }
  return stats;
}

ChannelStatistics add_statistics_to_file(const std::string& path) {
  const ChannelStatistics stats = [&] {
    const DatasetFile file(path, {"train"});
    return split_statistics(file, "train");
  }();
  std::lock_guard lock(hdf5_mutex());
  H5Handle f(ST_HDF5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "opening ", path, " for writing"),
             H5Fclose);
  H5Handle g(ST_HDF5_CHECK(H5Gopen2(f.get(), "train", H5P_DEFAULT), path, ": opening /train"), H5Gclose);
  write_float_array_attr(g.get(), "mean", stats.mean());
  write_float_array_attr(g.get(), "std", stats.std());
  return stats;
}

}  // namespace scaletrain::data
