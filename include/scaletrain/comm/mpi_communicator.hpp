// The MPI implementation of Communicator on host buffers: a private duplicate of the given
// communicator with MPI_ERRORS_RETURN, so every failure reaches ST_MPI_CHECK as a scaletrain::Error.
#pragma once
#include <mpi.h>

#include <memory>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

// Collective over comm: every rank of comm must call it. MPI must be initialized.
std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm = MPI_COMM_WORLD);

// The MPI communicator under `comm` (its private duplicate) when `comm` is one that
// make_mpi_communicator made; MPI_COMM_NULL otherwise.
MPI_Comm mpi_comm_of(const Communicator& comm);

}  // namespace scaletrain::comm
