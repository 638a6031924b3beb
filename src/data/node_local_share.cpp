// Each node's share of a split on node-local storage, shuffled within the node (data/node_local_share.hpp).
#include "scaletrain/data/node_local_share.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "scaletrain/core/check_mpi.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/sharding.hpp"
#include "scaletrain/data/stage_space.hpp"

namespace scaletrain::data {

namespace {
// The steps every rank takes: over all nodes, the fewest whole per-rank batches (drop) or the most.
int64_t equal_steps(const NodeGroups& g, const std::vector<int64_t>& bounds, int64_t batch, bool drop) {
  int64_t steps = drop ? INT64_MAX : 0;
  for (int k = 0; k < g.nodes(); ++k) {
    const int64_t rows = slots_part(bounds, g.first_slot(k), g.node_size(k)).count;
    const int64_t global = batch * g.node_size(k);
    steps = drop ? std::min(steps, rows / global) : std::max(steps, (rows + global - 1) / global);
  }
  return steps;
}

std::string where_node(const NodeGroups& g) {
  return "node " + std::to_string(g.node_index()) + " (host " + error_host() + ")";
}

// The leader's new, preallocated file for the node's share; "" and the descriptor, or the problem.
std::string create_share_file(const std::string& dir, const std::string& path, int64_t bytes, const std::string& who,
                              int& fd) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return "data.stage_dir = " + dir + " is not a directory on " + who + ": create it (node-local NVMe or tmpfs)";
  const int64_t free = free_bytes(dir);
  const std::string need = "the node's share of the split needs " + byte_size(bytes);
  if (free >= 0 && free < bytes)
    return "data.stage_dir = " + dir + " on " + who + " is full: " + need + ", " + byte_size(free) +
           " are free there; free space, point data.stage_dir at a larger node-local directory, or use more nodes";
  fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return "cannot create " + path + " in data.stage_dir on " + who + ": " + std::strerror(errno) +
           (errno == EROFS || errno == EACCES ? " (the directory must be writable)" : "");
  if (const int e = posix_fallocate(fd, 0, bytes); e != 0) {
    close(fd);
    fd = -1;
    unlink(path.c_str());
    return "data.stage_dir = " + dir + " on " + who + " cannot hold the node's share: " + need +
           ", and reserving it "
           "failed: " +
           std::strerror(e) + (e == ENOSPC ? " (the directory is full)" : "");
  }
  return "";
}
}  // namespace

NodeLocalShare::NodeLocalShare(const DatasetFile& file, const DatasetInfo& info, const NodeGroups& groups,
                               NodeShareOptions options)
    : sample_bytes_(static_cast<size_t>(shape_numel(info.sample_shape)) * dtype_size(info.dtype)),
      node_(groups.node_index()),
      local_rank_(groups.local_rank()),
      local_size_(groups.local_size()),
      batch_(options.batch) {
  const StagingMeter meter;
  const std::vector<int64_t> bounds = slot_boundaries(info.num_samples, groups.world_size(), 1);
  share_ = slots_part(bounds, groups.first_slot(node_), local_size_);
  ST_USER_CHECK(share_.count > 0, "split '", info.split, "' of ", info.path, " has ", info.num_samples,
                " samples, too few for a share on each of the ", groups.world_size(), " ranks");
  steps_ = equal_steps(groups, bounds, batch_, options.drop_remainder);
  long long pid = getpid();
  ST_MPI_CHECK(MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, groups.node()));
  const std::string path = options.dir + "/scaletrain-stage-" + info.split + "-node" + std::to_string(node_) + "-" +
                           std::to_string(pid) + ".bin";
  create_file(groups, options.dir, path, share_.count * static_cast<int64_t>(sample_bytes_));

  const RowRange part = slots_part(bounds, groups.slot());
  hang_if_chosen(options.hang_rank, groups.world_rank());
  std::vector<int32_t> part_labels(static_cast<size_t>(part.count));
  std::string problem;
  NonFiniteScan scan;
  try {
    copy_part(file, info, part, part_labels, scan);
  } catch (const std::exception& e) {
    problem = e.what();
  }
  problem = agree_on_problem(groups.world(), problem);
  if (!problem.empty()) ST_USER_FAIL(problem);
  if (const NonFiniteScan all = agree_on_nonfinite(groups.world(), scan); all.any())
    ST_USER_FAIL(nonfinite_message(info.path, info.split, all));
  report_.read_seconds = meter.seconds();
  gather_labels(groups, bounds, part_labels);
  ST_MPI_CHECK(MPI_Barrier(groups.node()));

  report_.where = options.dir + " (node-local share)";
  report_.stored_bytes = info.stored_bytes;
  report_.split_bytes = info.num_samples * static_cast<int64_t>(sample_bytes_ + sizeof(int32_t));
  report_.read_bytes = part.count * static_cast<int64_t>(sample_bytes_ + sizeof(int32_t));
  report_.node_read_bytes = share_.count * static_cast<int64_t>(sample_bytes_ + sizeof(int32_t));
  report_.node_bytes = report_.node_read_bytes;
  report_.nodes = groups.nodes();
  report_.node_index = node_;
  report_.node_size = local_size_;
  meter.finish(report_);
}

// The leader creates and reserves the file; the others open it once it exists; then the leader
// unlinks it, so it lives exactly as long as the ranks hold it open. Problems fail every rank.
void NodeLocalShare::create_file(const NodeGroups& groups, const std::string& dir, const std::string& path,
                                 int64_t bytes) {
  const std::string who = where_node(groups);
  std::string problem = groups.leader() ? create_share_file(dir, path, bytes, who, fd_) : "";
  problem = agree_on_problem(groups.world(), problem);
  if (!problem.empty()) {
    if (fd_ >= 0) unlink(path.c_str());
    ST_USER_FAIL(problem);
  }
  if (!groups.leader()) {
    fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0) problem = "cannot open " + path + " on " + who + ": " + std::strerror(errno);
  }
  problem = agree_on_problem(groups.world(), problem);
  ST_MPI_CHECK(MPI_Barrier(groups.node()));
  if (groups.leader()) unlink(path.c_str());
  if (!problem.empty()) ST_USER_FAIL(problem);
}

// This rank's part: read from the data set, written to its place in the local file.
void NodeLocalShare::copy_part(const DatasetFile& file, const DatasetInfo& info, RowRange part,
                               std::vector<int32_t>& labels, NonFiniteScan& scan) {
  const int64_t per_piece = std::max<int64_t>(1, (int64_t{64} << 20) / static_cast<int64_t>(sample_bytes_));
  std::vector<uint8_t> buf;
  for (int64_t done = 0; done < part.count; done += per_piece) {
    const RowRange piece{part.start + done, std::min(per_piece, part.count - done)};
    buf.resize(static_cast<size_t>(piece.count) * sample_bytes_);
    read_part(file, info, piece, buf.data(), labels.data() + done, &scan);
    auto offset = static_cast<off_t>(piece.start - share_.start) * static_cast<off_t>(sample_bytes_);
    for (size_t written = 0; written < buf.size();) {
      const ssize_t w = pwrite(fd_, buf.data() + written, buf.size() - written, offset + static_cast<off_t>(written));
      ST_USER_CHECK(w > 0, "writing the node's share to data.stage_dir failed on host ", error_host(), ": ",
                    std::strerror(errno));
      written += static_cast<size_t>(w);
    }
  }
}

void NodeLocalShare::gather_labels(const NodeGroups& groups, const std::vector<int64_t>& bounds,
                                   const std::vector<int32_t>& mine) {
  std::vector<int> counts(static_cast<size_t>(local_size_)), displs(static_cast<size_t>(local_size_));
  for (int j = 0; j < local_size_; ++j) {
    const RowRange part = slots_part(bounds, groups.first_slot(node_) + j);
    counts[static_cast<size_t>(j)] = static_cast<int>(part.count);
    displs[static_cast<size_t>(j)] = static_cast<int>(part.start - share_.start);
  }
  labels_.resize(static_cast<size_t>(share_.count));
  ST_MPI_CHECK(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_INT32_T, labels_.data(), counts.data(),
                              displs.data(), MPI_INT32_T, groups.node()));
}

NodeLocalShare::~NodeLocalShare() {
  if (fd_ >= 0) close(fd_);
}

std::vector<int64_t> NodeLocalShare::order(uint64_t seed, int64_t epoch, bool shuffle) const {
  return epoch_permutation(share_.count, seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(node_ + 1), epoch,
                           shuffle);
}

int64_t NodeLocalShare::position(int64_t step, int64_t row) const {
  return ((step * local_size_ + local_rank_) * batch_ + row) % share_.count;
}

int64_t NodeLocalShare::valid_rows(int64_t step) const {
  return std::clamp<int64_t>(share_.count - (step * local_size_ + local_rank_) * batch_, 0, batch_);
}

void NodeLocalShare::read_sample(int64_t share_row, void* dst) const {
  auto* out = static_cast<uint8_t*>(dst);
  const auto offset = static_cast<off_t>(share_row) * static_cast<off_t>(sample_bytes_);
  for (size_t got = 0; got < sample_bytes_;) {
    const ssize_t r = pread(fd_, out + got, sample_bytes_ - got, offset + static_cast<off_t>(got));
    ST_CHECK(r > 0, "reading row ", share_row, " of the node's share in data.stage_dir failed: ",
             r == 0 ? "unexpected end of file" : std::strerror(errno));
    got += static_cast<size_t>(r);
  }
}

}  // namespace scaletrain::data
