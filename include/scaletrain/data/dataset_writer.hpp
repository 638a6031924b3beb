// Writing a scaletrain dataset file (format version 1). The file is built under "<path>.tmp.<pid>" and
// renamed into place by finish(), so an interrupted packing never leaves a half-written data set
// under the real name. Samples are chunked along N (about 1 MiB per chunk by default), optionally
// gzip-compressed. Per-channel mean/std of a split are accumulated while writing, each write's
// block merged with Chan's update (data/channel_statistics.hpp), so data with a large offset keeps
// its variance.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scaletrain/core/tensor.hpp"
#include "scaletrain/data/channel_statistics.hpp"
#include "scaletrain/data/hdf5_handles.hpp"

namespace scaletrain::data {

struct WriterOptions {
  int64_t chunk_bytes = 1 << 20;  // target bytes per chunk of samples
  int gzip_level = 0;             // 0: no compression, 1..9: deflate
  bool statistics = true;         // accumulate each split's statistics in write()
};

class DatasetWriter {
 public:
  DatasetWriter(std::string path, std::vector<std::string> classes, Shape sample_shape, DType dtype,
                WriterOptions options = {});
  ~DatasetWriter();  // without finish(): removes the temporary file
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  // Creates /<split> with room for n samples; `source` says where the data came from.
  void create_split(const std::string& split, int64_t n, const std::string& source);
  // Writes samples [start, start+count) (row-major, dtype of the file) and their labels, and adds
  // them to the split's channel statistics.
  void write(const std::string& split, int64_t start, int64_t count, const void* samples, const int32_t* labels);
  // Stores mean/std attributes of `split` from what was written (call on the training split).
  void store_statistics(const std::string& split);
  // Stores the given statistics as `split`'s mean/std (a packer that computed them elsewhere, e.g.
  // merged over MPI ranks).
  void store_statistics(const std::string& split, const ChannelStatistics& stats);
  // Closes the file and renames <path>.tmp to <path>.
  void finish();

  int64_t chunk_samples() const { return chunk_samples_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_path_;
  Shape sample_shape_;
  DType dtype_;
  WriterOptions options_;
  int64_t chunk_samples_ = 1;
  H5Handle file_;
  std::map<std::string, ChannelStatistics> stats_;
  bool finished_ = false;
};

}  // namespace scaletrain::data
