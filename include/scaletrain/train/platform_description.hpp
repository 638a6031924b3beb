// What the job runs on, gathered from every rank: each node's GPUs (model and count) or, without
// them, its CPU model and cores. The MLPerf log's submission_platform defaults to it, and its
// accelerators_per_node comes from it.
#pragma once
#include <string>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

struct PlatformDescription {
  // "1 node of AMD EPYC 9654 96-Core Processor (2 cores)", "16 nodes of 4x NVIDIA H200";
  // nodes that differ are joined with " + ".
  std::string text;
  int nodes = 0;
  int accelerators_per_node = 0;  // the most GPUs any node's ranks use (0: none)
};

// "model name" of /proc/cpuinfo ("unknown <machine> CPU" where it is missing).
std::string cpu_model_name();

// Collective; `backend` is this rank's.
PlatformDescription describe_platform(comm::Communicator& comm, const Backend& backend);

}  // namespace scaletrain::train
