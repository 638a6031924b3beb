// What a node has room for before a split is staged, measured rather than assumed: the memory the
// kernel reports available, the free space of a directory (statvfs), the directory Open MPI backs
// shared windows with (its osc_sm_backing_directory MCA parameter, read through MPI_T), and this
// process's own read count (/proc/self/io rchar), so staging can report what it really read.
// agree_on_problem lets every rank of a communicator fail with the same message.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>

#include "scaletrain/core/timer.hpp"
#include "scaletrain/data/staging_report.hpp"

namespace scaletrain::data {

// MemAvailable of /proc/meminfo, in bytes (0 where it cannot be read).
int64_t available_memory_bytes();
// Bytes an unprivileged writer may still put in `dir` (statvfs f_bavail x f_frsize); -1 where
// `dir` cannot be examined.
int64_t free_bytes(const std::string& dir);
// Where Open MPI places the backing files of MPI_Win_allocate_shared (osc_sm_backing_directory,
// as set by --mca, the environment or a parameter file); "/dev/shm" where MPI does not say.
std::string shared_window_directory();
// Bytes this process has read through read-like system calls (/proc/self/io rchar); -1 where the
// kernel does not report it.
int64_t process_read_bytes();
// Every rank's `mine` (empty: no problem) is compared; each rank returns the problem of the lowest
// rank that has one, or "" when none has. Collective over comm.
std::string agree_on_problem(MPI_Comm comm, const std::string& mine);

// Times one staging from its construction: finish() fills the report's start, seconds and
// process_read_bytes (rchar's growth since construction).
class StagingMeter {
 public:
  StagingMeter();
  double seconds() const { return clock_.seconds(); }
  void finish(StagingReport& r) const;

 private:
  Stopwatch clock_;
  double start_;
  int64_t rchar_;
};

// testing.inject_stage_hang_rank: that rank blocks here forever (the watchdog's case).
void hang_if_chosen(int hang_rank, int world_rank);

// "1.23 GB", "47.3 MB", "12.0 kB" (decimal units, as df -H and data.stage_memory_gb use them).
std::string byte_size(int64_t bytes);

}  // namespace scaletrain::data
