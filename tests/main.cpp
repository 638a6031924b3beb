// GoogleTest main for every scaletrain test: MPI_Init, Kokkos initialize, RUN_ALL_TESTS, then
// shutdown in reverse. Only rank 0 prints gtest's progress; a failure on any rank fails every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include "scaletrain/core/mpi_environment.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/launch.hpp"

int main(int argc, char** argv) {
  scaletrain::set_mpi_environment_defaults();  // as the scaletrain app runs MPI
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  scaletrain::set_error_rank(rank);
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int result = 0;
  {
    scaletrain::kernels::KokkosScope kokkos;
    result = RUN_ALL_TESTS();
  }
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
