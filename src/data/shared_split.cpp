// A split staged once per node in MPI shared memory (data/shared_split.hpp).
#include "scaletrain/data/shared_split.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <exception>

#include "scaletrain/core/check_mpi.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/split_parts.hpp"
#include "scaletrain/data/stage_space.hpp"

namespace scaletrain::data {

namespace {
constexpr int64_t kRoundBytes = int64_t{256} << 20;  // per node and exchange round

int64_t stage_budget_bytes(double memory_gb) {
  return memory_gb > 0 ? static_cast<int64_t>(memory_gb * 1e9) : available_memory_bytes() / 4 * 3;
}

// Faults in the window's pages of [begin, end) in one call (MADV_POPULATE_WRITE, Linux 5.14) instead
// of one fault per page as the reads first touch them; a kernel without it leaves them to the reads.
void populate(uint8_t* begin, uint8_t* end) {
#ifdef MADV_POPULATE_WRITE
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = reinterpret_cast<uintptr_t>(end) / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
#else
  (void)begin;
  (void)end;
#endif
}
}  // namespace

std::string shared_space_problem(const DatasetInfo& info, int64_t bytes, double memory_gb) {
  const std::string what = "split '" + info.split + "' of " + info.path + " (" + std::to_string(info.num_samples) +
                           " samples, " + byte_size(bytes) + ")";
  const int64_t budget = stage_budget_bytes(memory_gb);
  if (bytes > budget)
    return what + " does not fit the node's staging budget of " + byte_size(budget) +
           (memory_gb > 0 ? " (data.stage_memory_gb)" : " (data.stage_memory_gb unset: 3/4 of the memory available)") +
           ": stage each node's share on local disk with data.stage_dir = DIR and data.shuffle = node, raise "
           "data.stage_memory_gb, or read it with data.mode = stream";
  const std::string dir = shared_window_directory();
  const int64_t free = free_bytes(dir);
  if (free >= 0 && bytes > free)
    return what + " needs " + byte_size(bytes) + " in " + dir +
           ", where Open MPI backs shared memory windows (osc_sm_backing_directory), but " + byte_size(free) +
           " are free there: free space in " + dir +
           ", point Open MPI at a larger node-local directory with "
           "`mpirun --mca osc_sm_backing_directory DIR` (or OMPI_MCA_osc_sm_backing_directory=DIR), or set "
           "data.stage_copy = rank or data.mode = stream";
  return "";
}

SharedSplit::SharedSplit(const DatasetFile& file, const DatasetInfo& info, const NodeGroups& groups,
                         SharedStageOptions options) {
  const StagingMeter meter;
  const int64_t rows = info.num_samples;
  const size_t sample_bytes = static_cast<size_t>(shape_numel(info.sample_shape)) * dtype_size(info.dtype);
  labels_offset_ = (static_cast<size_t>(rows) * sample_bytes + 63) / 64 * 64;
  const int64_t bytes = static_cast<int64_t>(labels_offset_ + static_cast<size_t>(rows) * sizeof(int32_t));
  const std::string problem = agree_on_problem(
      groups.world(), groups.leader() ? shared_space_problem(info, bytes, options.memory_gb) : std::string());
  if (!problem.empty()) ST_USER_FAIL(problem);
  ST_USER_CHECK(rows <= INT_MAX && sample_bytes <= static_cast<size_t>(INT_MAX), "split '", info.split, "' of ",
                info.path, ": node-shared staging exchanges at most 2^31 - 1 samples of at most 2 GiB each");
  allocate(groups, bytes);

  const std::vector<int64_t> bounds = slot_boundaries(rows, groups.world_size(), info.chunk_samples);
  const int slot = groups.slot();
  const RowRange mine = slots_part(bounds, slot);
  auto* labels = reinterpret_cast<int32_t*>(base_ + labels_offset_);
  populate(base_ + static_cast<size_t>(mine.start) * sample_bytes,
           base_ + static_cast<size_t>(mine.end()) * sample_bytes);
  NonFiniteScan scan;
  report_.read_bytes =
      read_part(file, info, mine, base_ + static_cast<size_t>(mine.start) * sample_bytes, labels + mine.start, &scan);
  report_.read_seconds = meter.seconds();
  if (const NonFiniteScan all = agree_on_nonfinite(groups.world(), scan); all.any())
    ST_USER_FAIL(nonfinite_message(info.path, info.split, all));
  hang_if_chosen(options.hang_rank, groups.world_rank());
  MPI_Win_sync(win_);
  ST_MPI_CHECK(MPI_Barrier(groups.node()));
  const double exchange_start = meter.seconds();
  if (groups.leader() && groups.nodes() > 1) exchange(groups, bounds, sample_bytes);
  if (groups.leader()) report_.exchange_seconds = meter.seconds() - exchange_start;
  ST_MPI_CHECK(MPI_Barrier(groups.node()));
  MPI_Win_sync(win_);

  const int k = groups.node_index();
  const int64_t node_rows = slots_part(bounds, groups.first_slot(k), groups.node_size(k)).count;
  report_.where = "node shared memory";
  report_.stored_bytes = info.stored_bytes;
  report_.split_bytes = rows * static_cast<int64_t>(sample_bytes + sizeof(int32_t));
  report_.node_read_bytes = node_rows * static_cast<int64_t>(sample_bytes + sizeof(int32_t));
  report_.node_bytes = report_.split_bytes;
  report_.exchanged_bytes = report_.split_bytes - report_.node_read_bytes;
  report_.nodes = groups.nodes();
  report_.node_index = k;
  report_.node_size = groups.local_size();
  meter.finish(report_);
}

void SharedSplit::allocate(const NodeGroups& groups, int64_t bytes) {
  void* mine = nullptr;
  ST_MPI_CHECK(MPI_Win_allocate_shared(groups.leader() ? static_cast<MPI_Aint>(bytes) : 0, 1, MPI_INFO_NULL,
                                       groups.node(), &mine, &win_));
  MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
  MPI_Aint size = 0;
  int unit = 1;
  void* base = nullptr;
  ST_MPI_CHECK(MPI_Win_shared_query(win_, 0, &size, &unit, &base));
  base_ = static_cast<uint8_t*>(base);
  // Passive-target epoch for the window's lifetime: MPI_Win_sync orders this rank's stores and
  // loads against the other ranks' around each barrier.
  ST_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
}

// The leaders' MPI_Allgatherv of their nodes' parts, in rounds of at most kRoundBytes per node;
// counts and displacements are in samples (a contiguous type of one sample), so they stay ints.
void SharedSplit::exchange(const NodeGroups& groups, const std::vector<int64_t>& bounds, size_t sample_bytes) {
  const int nodes = groups.nodes();
  std::vector<int> start(static_cast<size_t>(nodes)), count(static_cast<size_t>(nodes));
  int64_t largest = 0;
  for (int k = 0; k < nodes; ++k) {
    const RowRange part = slots_part(bounds, groups.first_slot(k), groups.node_size(k));
    start[static_cast<size_t>(k)] = static_cast<int>(part.start);
    count[static_cast<size_t>(k)] = static_cast<int>(part.count);
    largest = std::max(largest, part.count);
  }
  MPI_Datatype row = MPI_DATATYPE_NULL;
  ST_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(sample_bytes), MPI_BYTE, &row));
  ST_MPI_CHECK(MPI_Type_commit(&row));
  const int64_t per_round = std::max<int64_t>(1, kRoundBytes / static_cast<int64_t>(sample_bytes));
  std::vector<int> counts(static_cast<size_t>(nodes)), displs(static_cast<size_t>(nodes));
  for (int64_t done = 0; done < largest; done += per_round) {
    for (size_t k = 0; k < counts.size(); ++k) {
      const int64_t first = std::min<int64_t>(done, count[k]);
      counts[k] = static_cast<int>(std::min<int64_t>(per_round, count[k] - first));
      displs[k] = static_cast<int>(start[k] + first);
    }
    ST_MPI_CHECK(
        MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base_, counts.data(), displs.data(), row, groups.leaders()));
  }
  MPI_Type_free(&row);
  ST_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base_ + labels_offset_, count.data(), start.data(),
                              MPI_INT32_T, groups.leaders()));
}

SharedSplit::~SharedSplit() {
  // Freeing is collective over the node: skipped while an exception unwinds (the job is ending
  // and the other ranks may never get here).
  if (win_ == MPI_WIN_NULL || std::uncaught_exceptions() > 0) return;
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
}

}  // namespace scaletrain::data
