// The MPI settings scaletrain runs with (see the header): set only where the user has not.
#include "scaletrain/core/mpi_environment.hpp"

#include <cstdlib>

namespace scaletrain {

namespace {
constexpr const char* kLibnbcIallreduceAlgorithm = "OMPI_MCA_coll_libnbc_iallreduce_algorithm";
}  // namespace

void set_mpi_environment_defaults() {
  setenv(kLibnbcIallreduceAlgorithm, "1", /*overwrite=*/0);  // ring; see the header
}

std::string mpi_iallreduce_algorithm_setting() {
  const char* v = std::getenv(kLibnbcIallreduceAlgorithm);
  return v ? v : "";
}

}  // namespace scaletrain
