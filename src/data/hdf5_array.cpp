// A dataset inside an HDF5 file as an ArraySource (data/array_source.hpp): any real number type
// HDF5 knows (IEEE floats of 2, 4 or 8 bytes, integers of 1 to 8), read by hyperslabs of rows that
// HDF5 converts to double or int64.
#include <hdf5.h>
#include <sys/stat.h>

#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/data/array_source.hpp"
#include "scaletrain/data/hdf5_handles.hpp"

namespace scaletrain::data {
namespace {

// The element type of a dataset, or a UserError naming its HDF5 type class.
ElementType element_type(hid_t dataset, const std::string& spec) {
  H5Handle t(H5Dget_type(dataset), H5Tclose);
  const H5T_class_t cls = H5Tget_class(t.get());
  ElementType e;
  e.bytes = static_cast<int>(H5Tget_size(t.get()));
  if (cls == H5T_FLOAT) e.kind = 'f';
  else if (cls == H5T_INTEGER) e.kind = H5Tget_sign(t.get()) == H5T_SGN_NONE ? 'u' : 'i';
  const char* what = cls == H5T_STRING ? "strings" : cls == H5T_COMPOUND ? "compound records" : cls == H5T_ENUM ? "enums (booleans)" : "non-numeric values";
  ST_USER_CHECK(cls == H5T_FLOAT || cls == H5T_INTEGER, spec, " holds ", what,
                ", not numbers: pack float or integer datasets");
  return e;
}

class Hdf5Array : public ArraySource {
 public:
  Hdf5Array(const std::string& file, const std::string& dataset) {
    spec_ = file + ":" + dataset;
    std::lock_guard lock(hdf5_mutex());
    quiet_hdf5_errors();
    struct stat st {};
    ST_USER_CHECK(::stat(file.c_str(), &st) == 0, "cannot open ", file, ": no such file");
    ST_USER_CHECK(H5Fis_hdf5(file.c_str()) > 0, file, " is not an HDF5 file");
    file_ = H5Handle(ST_HDF5_CHECK(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "opening ", file), H5Fclose);
    ST_USER_CHECK(path_exists(dataset), file, " has no dataset ", dataset);
    dataset_ = H5Handle(ST_HDF5_CHECK(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT), "opening ", spec_),
                        H5Dclose);
    type_ = element_type(dataset_.get(), spec_);
    H5Handle space(H5Dget_space(dataset_.get()), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    ST_USER_CHECK(rank >= 1, spec_, " holds a single value, not an array of rows");
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    shape_.assign(dims.begin(), dims.end());
  }

  void read_rows(int64_t start, int64_t count, double* out) const override { read(start, count, H5T_NATIVE_DOUBLE, out); }
  void read_rows(int64_t start, int64_t count, int64_t* out) const override { read(start, count, H5T_NATIVE_INT64, out); }

 private:
  // Every dataset and group on the way to `path` exists (H5Dopen2 on a missing one is an HDF5 error stack).
  bool path_exists(const std::string& path) const {
    size_t at = 0;
    while ((at = path.find('/', at + 1)) != std::string::npos)
      if (H5Lexists(file_.get(), path.substr(0, at).c_str(), H5P_DEFAULT) <= 0) return false;
    return H5Lexists(file_.get(), path.c_str(), H5P_DEFAULT) > 0;
  }

  void read(int64_t start, int64_t count, hid_t mem_type, void* out) const {
    ST_CHECK(start >= 0 && start + count <= rows(), spec_, ": rows [", start, ", ", start + count, ") of ", rows());
    if (count == 0) return;
    std::lock_guard lock(hdf5_mutex());
    H5Handle fs(H5Dget_space(dataset_.get()), H5Sclose);
    std::vector<hsize_t> off(shape_.size(), 0), cnt(shape_.begin(), shape_.end());
    off[0] = static_cast<hsize_t>(start);
    cnt[0] = static_cast<hsize_t>(count);
    H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr);
    H5Handle ms(H5Screate_simple(static_cast<int>(cnt.size()), cnt.data(), nullptr), H5Sclose);
    ST_USER_CHECK(H5Dread(dataset_.get(), mem_type, ms.get(), fs.get(), H5P_DEFAULT, out) >= 0, spec_,
                  ": reading rows ", start, " to ", start + count, " failed: ", hdf5_last_error());
  }

  H5Handle file_, dataset_;
};

}  // namespace

std::unique_ptr<ArraySource> open_hdf5_array(const std::string& file, const std::string& dataset) {
  return std::make_unique<Hdf5Array>(file, dataset);
}

}  // namespace scaletrain::data
