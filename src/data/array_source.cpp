// ArraySource: which reader a spec names, and the element type's NumPy name (data/array_source.hpp).
#include "scaletrain/data/array_source.hpp"

#include "scaletrain/core/error.hpp"

namespace scaletrain::data {

std::string ElementType::name() const {
  const std::string base = kind == 'f' ? "float" : kind == 'i' ? "int" : "uint";
  return base + std::to_string(8 * bytes);
}

int64_t ArraySource::row_values() const {
  int64_t n = 1;
  for (size_t d = 1; d < shape_.size(); ++d) n *= shape_[d];
  return n;
}

std::unique_ptr<ArraySource> ArraySource::open(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  if (colon != std::string::npos && colon + 1 < spec.size() && spec[colon + 1] == '/')
    return open_hdf5_array(spec.substr(0, colon), spec.substr(colon + 1));
  ST_USER_CHECK(spec.size() > 4 && spec.substr(spec.size() - 4) == ".npy", "'", spec,
                "' names neither a NumPy .npy file nor an HDF5 dataset (FILE:/path/in/file)");
  return open_npy_array(spec);
}

}  // namespace scaletrain::data
