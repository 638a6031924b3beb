// ST_HDF5_CHECK: wraps an HDF5 call returning herr_t or hid_t (negative on failure) and throws
// scaletrain::Error with HDF5's innermost error message and the context the caller gives (a path).
#pragma once
#include <hdf5.h>

#include <string>

#include "scaletrain/core/error.hpp"

namespace scaletrain {
// The innermost message on HDF5's error stack (the library's own words), or "" if none.
std::string hdf5_last_error();
}  // namespace scaletrain

#define ST_HDF5_CHECK(call, ...)                                                                   \
  ([&]() {                                                                                         \
    auto st_h5_rc_ = (call);                                                                       \
    if (st_h5_rc_ < 0) [[unlikely]]                                                                \
      ::scaletrain::throw_error(__FILE__, __LINE__, "HDF5",                                        \
                                ::scaletrain::detail::concat(__VA_ARGS__) + ": " #call " failed: " + \
                                    ::scaletrain::hdf5_last_error());                              \
    return st_h5_rc_;                                                                              \
  }())
