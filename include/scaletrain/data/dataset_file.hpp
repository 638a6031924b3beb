// A scaletrain dataset file (HDF5, format version 1; see data-tools/README.md), opened read-only
// and validated: format and version attributes, splits, sample shapes and dtypes, label ranges.
// Every problem is reported with the file's path and how to fix it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/core/tensor.hpp"
#include "scaletrain/data/hdf5_handles.hpp"

namespace scaletrain::data {

inline constexpr const char* kFormatName = "scaletrain-dataset";
inline constexpr int64_t kFormatVersion = 1;

// What a loader and a model need to know about one split.
struct DatasetInfo {
  std::string path;
  std::string split;
  Shape sample_shape;  // [H, W, C] for images
  DType dtype = DType::u8;
  int64_t num_samples = 0;
  std::vector<std::string> classes;
  std::vector<float> mean, std;  // per channel, computed on the training split
  std::string source;
  int64_t chunk_samples = 0;  // samples per HDF5 chunk of /<split>/samples
  std::string compression;    // "none" or "gzip-<level>"
  int64_t stored_bytes = 0;   // the split's samples and labels as the file stores them (whole chunks, compressed)
};

// The problems found in a file (empty: valid). Checks every split present; `required_splits`
// must exist. Never throws for a bad file; throws only for internal errors.
std::vector<std::string> validate_dataset(const std::string& path,
                                          const std::vector<std::string>& required_splits = {"train"});

class DatasetFile {
 public:
  // Opens and validates; throws Error naming the file and every problem found.
  DatasetFile(const std::string& path, const std::vector<std::string>& required_splits = {"train"});
  ~DatasetFile();
  DatasetFile(const DatasetFile&) = delete;
  DatasetFile& operator=(const DatasetFile&) = delete;

  const std::string& path() const { return path_; }
  std::vector<std::string> splits() const;
  bool has_split(const std::string& split) const;
  // Throws Error naming the file and the splits it has when `split` is missing.
  DatasetInfo info(const std::string& split) const;
  size_t sample_bytes(const std::string& split) const;
  // Contiguous reads of samples [start, start+count) and their labels. Thread-safe.
  void read_samples(const std::string& split, int64_t start, int64_t count, void* dst) const;
  void read_labels(const std::string& split, int64_t start, int64_t count, int32_t* dst) const;

 private:
  std::string path_;
  H5Handle file_;
};

}  // namespace scaletrain::data
