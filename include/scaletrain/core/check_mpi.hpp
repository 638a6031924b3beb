// ST_MPI_CHECK: wraps an MPI call and throws scaletrain::Error with MPI's own error string.
#pragma once
#include <mpi.h>

#include "scaletrain/core/error.hpp"

#define ST_MPI_CHECK(call)                                                                    \
  do {                                                                                        \
    int st_mpi_rc_ = (call);                                                                  \
    if (st_mpi_rc_ != MPI_SUCCESS) [[unlikely]] {                                             \
      char st_mpi_msg_[MPI_MAX_ERROR_STRING];                                                 \
      int st_mpi_len_ = 0;                                                                    \
      MPI_Error_string(st_mpi_rc_, st_mpi_msg_, &st_mpi_len_);                                \
      ::scaletrain::throw_error(__FILE__, __LINE__, "MPI",                                    \
                                std::string(#call) + " failed: " + std::string(st_mpi_msg_, st_mpi_len_)); \
    }                                                                                         \
  } while (0)
