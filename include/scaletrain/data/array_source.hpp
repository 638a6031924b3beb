// ArraySource: a numeric N-d array that a user already has, in a NumPy .npy file or as a dataset
// inside an HDF5 file (spec "FILE:/path/in/file"), read row by row (a row is one index along the
// first axis) and widened to double or int64. What st-pack-arrays packs. Opening checks what can be
// checked without reading the data (a numeric element type, C order, a file long enough for its
// shape) and throws UserError naming the file and the problem.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace scaletrain::data {

// The element type of a source array: 'f' (IEEE float), 'i' (signed) or 'u' (unsigned integer),
// with its size in bytes; named as NumPy names it (float32, int64, uint8, ...).
struct ElementType {
  char kind = 'f';
  int bytes = 4;
  bool big_endian = false;  // .npy only; HDF5 converts byte order itself
  std::string name() const;
  bool is_integer() const { return kind == 'i' || kind == 'u'; }
};

class ArraySource {
 public:
  virtual ~ArraySource() = default;
  // "x.npy", or "data.h5:/group/dataset" (the last ':' followed by '/' splits file and path).
  static std::unique_ptr<ArraySource> open(const std::string& spec);

  const std::string& spec() const { return spec_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  ElementType type() const { return type_; }
  int64_t rows() const { return shape_.empty() ? 0 : shape_[0]; }
  int64_t row_values() const;  // values per row: the product of shape[1:]

  // Rows [start, start + count), row-major, widened. Thread-compatible (one reader per object).
  virtual void read_rows(int64_t start, int64_t count, double* out) const = 0;
  virtual void read_rows(int64_t start, int64_t count, int64_t* out) const = 0;

 protected:
  std::string spec_;
  std::vector<int64_t> shape_;
  ElementType type_;
};

std::unique_ptr<ArraySource> open_npy_array(const std::string& path);
std::unique_ptr<ArraySource> open_hdf5_array(const std::string& file, const std::string& dataset);

}  // namespace scaletrain::data
