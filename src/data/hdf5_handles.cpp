// HDF5 attribute helpers: variable-length strings, int64 scalars and 1-D float/int arrays.
#include "scaletrain/data/hdf5_handles.hpp"

#include <cstring>

#include "scaletrain/core/check_hdf5.hpp"

namespace scaletrain::data {

std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

void quiet_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

bool has_attr(hid_t obj, const char* name) { return H5Aexists(obj, name) > 0; }

namespace {
H5Handle open_attr(hid_t obj, const char* name) {
  return H5Handle(ST_HDF5_CHECK(H5Aopen(obj, name, H5P_DEFAULT), "opening attribute '", name, "'"), H5Aclose);
}
int64_t attr_elements(hid_t attr) {
  H5Handle space(H5Aget_space(attr), H5Sclose);
  return static_cast<int64_t>(H5Sget_simple_extent_npoints(space.get()));
}
H5Handle vlen_string_type() {
  H5Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}
}  // namespace

std::vector<std::string> read_string_array_attr(hid_t obj, const char* name) {
  H5Handle a = open_attr(obj, name);
  H5Handle ftype(H5Aget_type(a.get()), H5Tclose);
  ST_CHECK(H5Tget_class(ftype.get()) == H5T_STRING, "attribute '", name, "' is not a string");
  const int64_t n = attr_elements(a.get());
  std::vector<std::string> out;
  if (n == 0) return out;
  if (H5Tis_variable_str(ftype.get()) > 0) {
    std::vector<char*> ptrs(static_cast<size_t>(n), nullptr);
    H5Handle mt = vlen_string_type();
    ST_HDF5_CHECK(H5Aread(a.get(), mt.get(), ptrs.data()), "reading attribute '", name, "'");
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5Handle space(H5Aget_space(a.get()), H5Sclose);
    H5Dvlen_reclaim(mt.get(), space.get(), H5P_DEFAULT, ptrs.data());
  } else {
    const size_t len = H5Tget_size(ftype.get());
    std::vector<char> buf(len * static_cast<size_t>(n) + 1, '\0');
    H5Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt.get(), len);
    ST_HDF5_CHECK(H5Aread(a.get(), mt.get(), buf.data()), "reading attribute '", name, "'");
    for (int64_t i = 0; i < n; ++i) {
      const char* s = buf.data() + static_cast<size_t>(i) * len;
      out.emplace_back(s, strnlen(s, len));
    }
  }
  return out;
}

std::string read_string_attr(hid_t obj, const char* name) {
  auto v = read_string_array_attr(obj, name);
  ST_CHECK(v.size() == 1, "attribute '", name, "' holds ", v.size(), " strings, expected one");
  return v[0];
}

std::vector<int64_t> read_int_array_attr(hid_t obj, const char* name) {
  H5Handle a = open_attr(obj, name);
  H5Handle ftype(H5Aget_type(a.get()), H5Tclose);
  ST_CHECK(H5Tget_class(ftype.get()) == H5T_INTEGER, "attribute '", name, "' is not an integer");
  std::vector<int64_t> out(static_cast<size_t>(attr_elements(a.get())));
  if (out.empty()) return out;
  ST_HDF5_CHECK(H5Aread(a.get(), H5T_NATIVE_INT64, out.data()), "reading attribute '", name, "'");
  return out;
}

int64_t read_int_attr(hid_t obj, const char* name) {
  auto v = read_int_array_attr(obj, name);
  ST_CHECK(v.size() == 1, "attribute '", name, "' holds ", v.size(), " values, expected one");
  return v[0];
}

std::vector<float> read_float_array_attr(hid_t obj, const char* name) {
  H5Handle a = open_attr(obj, name);
  H5Handle ftype(H5Aget_type(a.get()), H5Tclose);
  ST_CHECK(H5Tget_class(ftype.get()) == H5T_FLOAT, "attribute '", name, "' is not floating point");
  std::vector<float> out(static_cast<size_t>(attr_elements(a.get())));
  ST_HDF5_CHECK(H5Aread(a.get(), H5T_NATIVE_FLOAT, out.data()), "reading attribute '", name, "'");
  return out;
}

double read_double_attr(hid_t obj, const char* name) {
  H5Handle a = open_attr(obj, name);
  H5Handle ftype(H5Aget_type(a.get()), H5Tclose);
  ST_CHECK(H5Tget_class(ftype.get()) == H5T_FLOAT && attr_elements(a.get()) == 1, "attribute '", name,
           "' is not one floating-point value");
  double v = 0;
  ST_HDF5_CHECK(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v), "reading attribute '", name, "'");
  return v;
}

namespace {
void write_attr(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, hsize_t n, bool scalar,
                const void* data) {
  if (H5Aexists(obj, name) > 0) ST_HDF5_CHECK(H5Adelete(obj, name), "replacing attribute '", name, "'");
  // An empty array has no elements to write (HDF5 refuses a null buffer): a null dataspace.
  const bool empty = !scalar && n == 0;
  H5Handle space(scalar ? H5Screate(H5S_SCALAR) : empty ? H5Screate(H5S_NULL) : H5Screate_simple(1, &n, nullptr),
                 H5Sclose);
  H5Handle a(ST_HDF5_CHECK(H5Acreate2(obj, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                           "creating attribute '", name, "'"),
             H5Aclose);
  if (empty) return;
  ST_HDF5_CHECK(H5Awrite(a.get(), mem_type, data), "writing attribute '", name, "'");
}
}  // namespace

void write_string_array_attr(hid_t obj, const char* name, const std::vector<std::string>& values) {
  std::vector<const char*> ptrs;
  for (const auto& s : values) ptrs.push_back(s.c_str());
  H5Handle t = vlen_string_type();
  write_attr(obj, name, t.get(), t.get(), values.size(), false, ptrs.data());
}

void write_string_attr(hid_t obj, const char* name, const std::string& value) {
  const char* p = value.c_str();
  H5Handle t = vlen_string_type();
  write_attr(obj, name, t.get(), t.get(), 1, true, &p);
}

void write_int_attr(hid_t obj, const char* name, int64_t value) {
  write_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 1, true, &value);
}

void write_int_array_attr(hid_t obj, const char* name, const std::vector<int64_t>& values) {
  write_attr(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, values.size(), false, values.data());
}

void write_double_attr(hid_t obj, const char* name, double value) {
  write_attr(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 1, true, &value);
}

void write_float_array_attr(hid_t obj, const char* name, const std::vector<float>& values) {
  write_attr(obj, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, values.size(), false, values.data());
}

}  // namespace scaletrain::data
