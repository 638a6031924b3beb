// data.stage_dir with data.shuffle = node, for a split larger than a node's memory (DeepCAM's way):
// each node stages only its share of the split (its slots' parts, data/split_parts.hpp, cut to the
// row) into one file in a node-local directory (NVMe or tmpfs). Every rank copies the part it reads
// from the shared file system into that file, so the file system is read once per job; the share's
// labels stay in memory. Every epoch the node permutes its share from (seed, epoch, node) and its
// ranks take interleaved batches of it, read from the local file by the loader's reader thread. The
// sample order therefore differs from one rank's. Every rank takes the same number of steps: the
// fewest whole batches any node's share gives (drop remainder), or the most (the shorter shares
// pad by wrapping around). The file is unlinked once every rank of the node has opened it, so it
// goes away with the job however the job ends.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/nonfinite_scan.hpp"
#include "scaletrain/data/node_groups.hpp"
#include "scaletrain/data/split_parts.hpp"
#include "scaletrain/data/staging_report.hpp"

namespace scaletrain::data {

struct NodeShareOptions {
  std::string dir;    // data.stage_dir
  int64_t batch = 1;  // per rank
  bool drop_remainder = true;
  int hang_rank = -1;  // testing: this world rank blocks before its copy, forever
};

class NodeLocalShare {
 public:
  // Collective over groups.world(). A stage_dir that is missing, read-only or too small fails every
  // rank with the same message.
  NodeLocalShare(const DatasetFile& file, const DatasetInfo& info, const NodeGroups& groups, NodeShareOptions options);
  ~NodeLocalShare();
  NodeLocalShare(const NodeLocalShare&) = delete;
  NodeLocalShare& operator=(const NodeLocalShare&) = delete;

  int64_t steps_per_epoch() const { return steps_; }
  int64_t rows() const { return share_.count; }
  // The share's order in an epoch: a permutation of [0, rows()).
  std::vector<int64_t> order(uint64_t seed, int64_t epoch, bool shuffle) const;
  // The position in that order of row `row` of this rank's batch at `step` (wrapped when padding).
  int64_t position(int64_t step, int64_t row) const;
  int64_t valid_rows(int64_t step) const;
  void read_sample(int64_t share_row, void* dst) const;  // from the local file
  int32_t label(int64_t share_row) const { return labels_[static_cast<size_t>(share_row)]; }
  int64_t split_index(int64_t share_row) const { return share_.start + share_row; }
  const StagingReport& report() const { return report_; }

 private:
  void create_file(const NodeGroups& groups, const std::string& dir, const std::string& path, int64_t bytes);
  void copy_part(const DatasetFile& file, const DatasetInfo& info, RowRange part, std::vector<int32_t>& labels, NonFiniteScan& scan);
  void gather_labels(const NodeGroups& groups, const std::vector<int64_t>& bounds, const std::vector<int32_t>& mine);

  RowRange share_;
  size_t sample_bytes_ = 0;
  int fd_ = -1;
  int node_ = 0, local_rank_ = 0, local_size_ = 1;
  int64_t batch_ = 1, steps_ = 0;
  std::vector<int32_t> labels_;
  StagingReport report_;
};

}  // namespace scaletrain::data
