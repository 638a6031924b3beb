// What staging a split cost one rank: where the copy lives, seconds, and the bytes it read from the
// file (the loader's count and the kernel's, /proc/self/io rchar), its node's reads and what its
// node received from other nodes. The trainer gathers these for the start-up, run.json and the
// timeline.
#pragma once
#include <cstdint>
#include <string>

namespace scaletrain::data {

struct StagingReport {
  std::string where;                // "node shared memory", "rank memory" or the stage_dir file
  double start = 0;                 // now_seconds() when staging began
  double seconds = 0;               // reads, exchange and synchronization together
  double read_seconds = 0;          // this rank's reads from the file
  double exchange_seconds = 0;      // the exchange between nodes (leaders; 0 elsewhere)
  int64_t split_bytes = 0;          // the split's samples and labels
  int64_t stored_bytes = 0;         // the same as the file stores them (whole chunks; compressed)
  int64_t read_bytes = 0;           // this rank read from the file
  int64_t node_read_bytes = 0;      // this rank's node read from the file
  int64_t node_bytes = 0;           // what the node holds: the split, or its share of it
  int64_t exchanged_bytes = 0;      // this rank's node received from other nodes
  int64_t process_read_bytes = -1;  // rchar's growth during staging (-1: not reported by the kernel)
  int nodes = 1, node_index = 0, node_size = 1;
};

}  // namespace scaletrain::data
