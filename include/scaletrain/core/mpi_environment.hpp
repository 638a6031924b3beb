// The MPI settings scaletrain runs with, put into the environment before MPI_Init by every program
// that initializes MPI (the app, its benchmarks, the test main).
#pragma once
#include <string>

namespace scaletrain {

// Call before MPI_Init: MPI settings scaletrain depends on for speed, each only where the user's
// environment (or mpirun --mca) has not set it. Open MPI's non-blocking all-reduce (coll/libnbc)
// otherwise reduces an in-place buffer, or one on fewer than 4 ranks, with a binomial tree: a
// reduce to rank 0 and a broadcast back, each rank idle half the time. Its ring
// (OMPI_MCA_coll_libnbc_iallreduce_algorithm=1) halves the time of a 1 MB gradient bucket on two
// ranks (scaletrain-bench-allreduce --async). Other MPI implementations ignore the variable.
void set_mpi_environment_defaults();
// The libnbc all-reduce algorithm in the environment ("1" = ring), for run.json; "" if unset.
std::string mpi_iallreduce_algorithm_setting();

}  // namespace scaletrain
