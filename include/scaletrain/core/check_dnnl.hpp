// ST_DNNL_CHECK: runs a oneDNN C++ API expression and turns dnnl::error into scaletrain::Error
// with oneDNN's status and message.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <string>

#include "scaletrain/core/error.hpp"

#define ST_DNNL_CHECK(...)                                                                      \
  do {                                                                                          \
    try {                                                                                       \
      __VA_ARGS__;                                                                              \
    } catch (const dnnl::error& st_dnnl_e_) {                                                   \
      ::scaletrain::throw_error(__FILE__, __LINE__, "oneDNN",                                   \
                                std::string(#__VA_ARGS__) + " failed: status " +                \
                                    std::to_string(static_cast<int>(st_dnnl_e_.status)) + ": " + \
                                    st_dnnl_e_.what());                                         \
    }                                                                                           \
  } while (0)
