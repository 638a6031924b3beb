// Test support: reads the reference files under tests/data (datasets and attributes of a group)
// with the HDF5 C API, every call checked.
#pragma once
#include <hdf5.h>

#include <string>
#include <vector>

#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::testing {

class ReferenceFile {
 public:
  explicit ReferenceFile(const std::string& path) : path_(path) {
    file_ = ST_HDF5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), path);
  }
  ~ReferenceFile() { H5Fclose(file_); }
  ReferenceFile(const ReferenceFile&) = delete;
  ReferenceFile& operator=(const ReferenceFile&) = delete;

  std::vector<std::string> groups() const {
    std::vector<std::string> names;
    H5Literate(file_, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
    return names;
  }
  bool has(const std::string& obj) const { return H5Lexists(file_, obj.c_str(), H5P_DEFAULT) > 0; }

  // A dataset as a tensor of the given dtype (f32 or i32), shape as stored.
  Tensor dataset(const std::string& name, DType dtype = DType::f32) const {
    hid_t d = ST_HDF5_CHECK(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), path_, ":", name);
    hid_t space = H5Dget_space(d);
    const int rank = H5Sget_simple_extent_ndims(space);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    Shape shape(dims.begin(), dims.end());
    Tensor t(shape, dtype);
    hid_t mem = dtype == DType::f32 ? H5T_NATIVE_FLOAT : dtype == DType::i32 ? H5T_NATIVE_INT32 : H5T_NATIVE_DOUBLE;
    ST_HDF5_CHECK(H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw()), path_, ":", name);
    H5Sclose(space);
    H5Dclose(d);
    return t;
  }
  double scalar_double(const std::string& name) const {
    hid_t d = ST_HDF5_CHECK(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), path_, ":", name);
    double v = 0;
    ST_HDF5_CHECK(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v), path_, ":", name);
    H5Dclose(d);
    return v;
  }
  std::vector<int64_t> attr_ints(const std::string& obj, const std::string& attr) const {
    hid_t a = ST_HDF5_CHECK(H5Aopen_by_name(file_, obj.c_str(), attr.c_str(), H5P_DEFAULT, H5P_DEFAULT), path_, ":",
                            obj, "@", attr);
    hid_t space = H5Aget_space(a);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    std::vector<int64_t> v(static_cast<size_t>(n));
    ST_HDF5_CHECK(H5Aread(a, H5T_NATIVE_INT64, v.data()), path_, ":", obj, "@", attr);
    H5Sclose(space);
    H5Aclose(a);
    return v;
  }
  int64_t attr_int(const std::string& obj, const std::string& attr) const { return attr_ints(obj, attr).at(0); }
  bool has_attr(const std::string& obj, const std::string& attr) const {
    return ST_HDF5_CHECK(H5Aexists_by_name(file_, obj.c_str(), attr.c_str(), H5P_DEFAULT), path_, ":", obj, "@", attr) >
           0;
  }
  double attr_double(const std::string& obj, const std::string& attr) const {
    hid_t a = ST_HDF5_CHECK(H5Aopen_by_name(file_, obj.c_str(), attr.c_str(), H5P_DEFAULT, H5P_DEFAULT), path_, ":",
                            obj, "@", attr);
    double v = 0;
    ST_HDF5_CHECK(H5Aread(a, H5T_NATIVE_DOUBLE, &v), path_, ":", obj, "@", attr);
    H5Aclose(a);
    return v;
  }
  std::string attr_string(const std::string& obj, const std::string& attr) const {
    hid_t a = ST_HDF5_CHECK(H5Aopen_by_name(file_, obj.c_str(), attr.c_str(), H5P_DEFAULT, H5P_DEFAULT), path_, ":",
                            obj, "@", attr);
    hid_t type = H5Aget_type(a);
    std::string out;
    if (H5Tis_variable_str(type) > 0) {
      char* s = nullptr;
      hid_t mem = H5Tcopy(H5T_C_S1);
      H5Tset_size(mem, H5T_VARIABLE);
      H5Tset_cset(mem, H5Tget_cset(type));
      ST_HDF5_CHECK(H5Aread(a, mem, &s), path_, ":", obj, "@", attr);
      out = s ? s : "";
      H5free_memory(s);
      H5Tclose(mem);
    } else {
      std::vector<char> buf(H5Tget_size(type) + 1, '\0');
      ST_HDF5_CHECK(H5Aread(a, type, buf.data()), path_, ":", obj, "@", attr);
      out = buf.data();
    }
    H5Tclose(type);
    H5Aclose(a);
    return out;
  }

 private:
  static herr_t collect(hid_t, const char* name, const H5L_info_t*, void* out) {
    static_cast<std::vector<std::string>*>(out)->push_back(name);
    return 0;
  }
  std::string path_;
  hid_t file_ = -1;
};

}  // namespace scaletrain::testing
