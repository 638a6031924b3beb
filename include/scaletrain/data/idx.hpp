// Reading IDX files (the MNIST / Fashion-MNIST format), raw or gzip-compressed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace scaletrain::data {

struct IdxArray {
  std::vector<int64_t> dims;  // e.g. [60000, 28, 28]
  std::vector<uint8_t> data;  // unsigned bytes, row-major
};

// Throws Error naming the file on a bad magic number, an element type other than unsigned byte,
// or a file shorter than its header says.
IdxArray read_idx(const std::string& path);

}  // namespace scaletrain::data
