// The MPI settings scaletrain puts into the environment before MPI_Init: libnbc's ring all-reduce by
// default, and never over a value the user chose.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "scaletrain/core/mpi_environment.hpp"

namespace {

constexpr const char* kVar = "OMPI_MCA_coll_libnbc_iallreduce_algorithm";

TEST(MpiEnvironment, RingIsTheDefault) {
  const std::string before = scaletrain::mpi_iallreduce_algorithm_setting();
  unsetenv(kVar);
  EXPECT_EQ(scaletrain::mpi_iallreduce_algorithm_setting(), "");
  scaletrain::set_mpi_environment_defaults();
  EXPECT_EQ(scaletrain::mpi_iallreduce_algorithm_setting(), "1");
  if (!before.empty()) setenv(kVar, before.c_str(), 1);
}

TEST(MpiEnvironment, TheUsersChoiceStays) {
  const std::string before = scaletrain::mpi_iallreduce_algorithm_setting();
  setenv(kVar, "3", 1);
  scaletrain::set_mpi_environment_defaults();
  EXPECT_EQ(scaletrain::mpi_iallreduce_algorithm_setting(), "3");
  if (before.empty())
    unsetenv(kVar);
  else
    setenv(kVar, before.c_str(), 1);
}

}  // namespace
