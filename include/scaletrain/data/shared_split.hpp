// One node's copy of a whole split in MPI shared memory (MPI_Win_allocate_shared on the node's
// communicator: the node leader allocates, every rank of the node maps the same pages), staged so
// that each byte of the file is read once per job: every rank reads its slot's part
// (data/split_parts.hpp) straight into the window, then the node leaders exchange their nodes'
// parts with MPI_Allgatherv in rounds of at most 256 MiB per node (Open MPI 4.1 has no large-count
// collectives). Before anything is allocated or read, the node leaders check that the split fits
// the node's budget and the directory Open MPI backs the window with; a problem fails every rank
// with the same message.
#pragma once
#include <mpi.h>

#include <cstdint>

#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/node_groups.hpp"
#include "scaletrain/data/staging_report.hpp"

namespace scaletrain::data {

struct SharedStageOptions {
  double memory_gb = 0;  // data.stage_memory_gb; 0: three quarters of MemAvailable, measured
  int hang_rank = -1;    // testing: this world rank blocks before the exchange, forever
};

class SharedSplit {
 public:
  // Collective over groups.world().
  SharedSplit(const DatasetFile& file, const DatasetInfo& info, const NodeGroups& groups, SharedStageOptions options);
  ~SharedSplit();
  SharedSplit(const SharedSplit&) = delete;
  SharedSplit& operator=(const SharedSplit&) = delete;

  const uint8_t* samples() const { return base_; }
  const int32_t* labels() const { return reinterpret_cast<const int32_t*>(base_ + labels_offset_); }
  const StagingReport& report() const { return report_; }

 private:
  void allocate(const NodeGroups& groups, int64_t bytes);
  void exchange(const NodeGroups& groups, const std::vector<int64_t>& bounds, size_t sample_bytes);

  MPI_Win win_ = MPI_WIN_NULL;
  uint8_t* base_ = nullptr;
  size_t labels_offset_ = 0;
  StagingReport report_;
};

// Why the leader's node cannot hold `bytes` of split in shared memory (the budget, or the free
// space of Open MPI's backing directory); "" when it can.
std::string shared_space_problem(const DatasetInfo& info, int64_t bytes, double memory_gb);

}  // namespace scaletrain::data
