// Staging across the job: every rank's data::StagingReport for one split, gathered (collective),
// and how the start-up output, run.json and the timeline show it: seconds, GB/s, bytes read from
// the file per rank and per node (the loader's count and the kernel's rchar), bytes exchanged
// between nodes, and where the copy lives.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/data/staging_report.hpp"

namespace scaletrain::train {

struct StagingSummary {
  std::string split;                         // "train", "test", ...
  std::string where;                         // rank 0's
  std::vector<data::StagingReport> ranks;    // in rank order (where left empty)
  double seconds() const;                    // the slowest rank's
  int64_t file_bytes() const;                // read from the file by all ranks (the loader's count)
  int64_t process_read_bytes() const;        // the kernel's rchar over all ranks (-1: not reported)
  int64_t exchanged_bytes_per_node() const;  // the most any node received from the others
};

StagingSummary gather_staging(comm::Communicator& comm, const std::string& split, const data::StagingReport& mine);
// One start-up line.
std::string staging_line(const StagingSummary& s);
nlohmann::json staging_json(const StagingSummary& s);

}  // namespace scaletrain::train
