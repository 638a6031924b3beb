// Reads the innermost message of HDF5's error stack for ST_HDF5_CHECK.
#include <string>

#include "scaletrain/core/check_hdf5.hpp"

namespace scaletrain {
namespace {
herr_t take_innermost(unsigned n, const H5E_error2_t* e, void* out) {
  if (n == 0 && e && e->desc) *static_cast<std::string*>(out) = e->desc;
  return 0;
}
}  // namespace

std::string hdf5_last_error() {
  std::string msg;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &msg);
  H5Eclear2(H5E_DEFAULT);
  return msg.empty() ? std::string("(no HDF5 message)") : msg;
}

}  // namespace scaletrain
