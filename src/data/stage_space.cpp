// Measurements behind staging's budget checks and its read counts (data/stage_space.hpp).
#include "scaletrain/data/stage_space.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <vector>

namespace scaletrain::data {

namespace {
// The value of `key` ("MemAvailable:", "rchar:") in a /proc file of "key value" lines; -1 if absent.
int64_t proc_value(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  int64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
    in.ignore(INT_MAX, '\n');
  }
  return -1;
}

// The string control variable `name` of the MPI library through the MPI tool interface; "" when
// the library has no such variable.
std::string mpi_string_cvar(const char* name) {
  // Open MPI takes MPI_T's thread level as the library's, so ask for the one MPI already provides.
  int level = MPI_THREAD_SINGLE, provided = 0;
  MPI_Query_thread(&level);
  if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS) return "";
  std::string value;
  int index = -1;
  if (MPI_T_cvar_get_index(name, &index) == MPI_SUCCESS) {
    MPI_T_cvar_handle handle;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
      std::vector<char> buf(static_cast<size_t>(count > 0 ? count : 1) + 4096, '\0');
      if (MPI_T_cvar_read(handle, buf.data()) == MPI_SUCCESS) value = buf.data();
      MPI_T_cvar_handle_free(&handle);
    }
  }
  MPI_T_finalize();
  return value;
}
}  // namespace

int64_t available_memory_bytes() {
  const int64_t kb = proc_value("/proc/meminfo", "MemAvailable:");
  return kb < 0 ? 0 : kb * 1024;
}

int64_t free_bytes(const std::string& dir) {
  struct statvfs s {};
  if (statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<int64_t>(s.f_bavail) * static_cast<int64_t>(s.f_frsize);
}

std::string shared_window_directory() {
  std::string dir = mpi_string_cvar("osc_sm_backing_directory");
  return dir.empty() ? "/dev/shm" : dir;
}

int64_t process_read_bytes() { return proc_value("/proc/self/io", "rchar:"); }

StagingMeter::StagingMeter() : start_(now_seconds()), rchar_(process_read_bytes()) {}

void StagingMeter::finish(StagingReport& r) const {
  r.start = start_;
  r.seconds = clock_.seconds();
  const int64_t rchar = process_read_bytes();
  r.process_read_bytes = rchar_ < 0 || rchar < 0 ? -1 : rchar - rchar_;
}

void hang_if_chosen(int hang_rank, int world_rank) {
  if (hang_rank != world_rank) return;
  for (;;) pause();
}

std::string agree_on_problem(MPI_Comm comm, const std::string& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int first = mine.empty() ? size : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return "";
  int length = static_cast<int>(mine.size());
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::string problem = rank == first ? mine : std::string(static_cast<size_t>(length), '\0');
  MPI_Bcast(problem.data(), length, MPI_CHAR, first, comm);
  return problem;
}

std::string byte_size(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  return buf;
}

}  // namespace scaletrain::data
