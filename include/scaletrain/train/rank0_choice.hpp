// The one way a run makes a choice every rank must share (run.cpu_bf16_gemm's GEMM way,
// run.cudnn_algorithms' algorithm book): rank 0 asks its sources in order (a resumed checkpoint's
// choice, a file's, its own timing) and takes the first that gives one; every rank gets it, and
// where it came from, by broadcast. Nothing is timed or read on the other ranks, so they cannot
// disagree; an error in a source is every rank's.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

struct ChoiceSource {
  std::string name;                  // "checkpoint", "file", "timed"
  std::function<std::string()> get;  // on rank 0: the choice as text, "" where this source has none
};

struct Rank0Choice {
  std::string text;    // "" where no source gave one
  std::string source;  // the name of the source that gave it; "" where none did
  double seconds = 0;  // rank 0's time in that source (0 on the other ranks)
};

// Collective. Whether `mine` holds on every rank: a choice is made only where every rank takes part,
// so that no rank waits for a broadcast the others skip.
bool on_every_rank(comm::Communicator& comm, bool mine);

// Collective.
Rank0Choice choose_on_rank0(comm::Communicator& comm, const std::vector<ChoiceSource>& sources);

}  // namespace scaletrain::train
