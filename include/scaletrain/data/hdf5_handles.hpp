// Small RAII wrappers and attribute helpers over HDF5's C API, shared by the dataset reader,
// writer and validator. HDF5 here is not built thread-safe: every call from the data module
// holds hdf5_mutex() (the loaders' reader threads and the main thread may both touch files).
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace scaletrain::data {

std::mutex& hdf5_mutex();
// Turns off HDF5's automatic printing of error stacks (errors become our Error messages).
void quiet_hdf5_errors();

class H5Handle {
 public:
  H5Handle() = default;
  H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~H5Handle() { reset(); }
  H5Handle(H5Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

bool has_attr(hid_t obj, const char* name);
std::string read_string_attr(hid_t obj, const char* name);
int64_t read_int_attr(hid_t obj, const char* name);
std::vector<float> read_float_array_attr(hid_t obj, const char* name);
double read_double_attr(hid_t obj, const char* name);
std::vector<int64_t> read_int_array_attr(hid_t obj, const char* name);
std::vector<std::string> read_string_array_attr(hid_t obj, const char* name);

void write_string_attr(hid_t obj, const char* name, const std::string& value);
void write_int_attr(hid_t obj, const char* name, int64_t value);
void write_float_array_attr(hid_t obj, const char* name, const std::vector<float>& values);
void write_double_attr(hid_t obj, const char* name, double value);
void write_int_array_attr(hid_t obj, const char* name, const std::vector<int64_t>& values);
void write_string_array_attr(hid_t obj, const char* name, const std::vector<std::string>& values);

}  // namespace scaletrain::data
