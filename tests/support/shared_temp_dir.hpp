// A temporary directory made by rank 0 and named to every rank (MPI tests whose ranks share files).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::testing {

// prefix: the directory name's start, e.g. "scaletrain-equiv".
inline std::string shared_temp_dir(comm::Communicator& comm, const std::string& prefix) {
  char buf[256] = {};
  if (comm.rank() == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    std::snprintf(buf, sizeof buf, "%s", mkdtemp(tmpl.data()));
  }
  comm.broadcast(buf, sizeof buf, 0);
  return buf;
}

}  // namespace scaletrain::testing
