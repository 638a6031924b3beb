// page_cache_resident_bytes and drop_from_page_cache: mincore and posix_fadvise on the data file.
#include "scaletrain/data/page_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "scaletrain/core/error.hpp"

namespace scaletrain::data {
namespace {

// An open read-only descriptor, closed on scope exit.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    ST_CHECK(fd_ >= 0, "cannot open ", path, " to examine its pages in the page cache: ", std::strerror(errno));
  }
  ~ReadOnlyFile() { ::close(fd_); }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

int64_t file_size(const ReadOnlyFile& f, const std::string& path) {
  struct stat st {};
  ST_CHECK(::fstat(f.fd(), &st) == 0, "cannot stat ", path, ": ", std::strerror(errno));
  return static_cast<int64_t>(st.st_size);
}

int64_t resident_bytes(const ReadOnlyFile& f, const std::string& path, int64_t size) {
  if (size == 0) return 0;
  void* map = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, f.fd(), 0);
  ST_CHECK(map != MAP_FAILED, "cannot map ", path, " to examine its pages in the page cache: ", std::strerror(errno));
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> resident(static_cast<size_t>((size + page - 1) / page));
  const int rc = ::mincore(map, static_cast<size_t>(size), resident.data());
  const int err = errno;
  ::munmap(map, static_cast<size_t>(size));
  ST_CHECK(rc == 0, "mincore on ", path, " failed: ", std::strerror(err));
  int64_t pages = 0;
  for (unsigned char r : resident) pages += r & 1;
  return pages * page;
}

}  // namespace

int64_t page_cache_resident_bytes(const std::string& path) {
  const ReadOnlyFile f(path);
  return resident_bytes(f, path, file_size(f, path));
}

PageCacheDrop drop_from_page_cache(const std::string& path) {
  const ReadOnlyFile f(path);
  PageCacheDrop d;
  d.file_bytes = file_size(f, path);
  d.cached_before = resident_bytes(f, path, d.file_bytes);
  // The kernel drops clean pages only: a file written just before the run is written back first.
  ST_CHECK(::fdatasync(f.fd()) == 0 || errno == EINVAL || errno == EROFS, "cannot write back ", path,
           " before dropping it from the page cache: ", std::strerror(errno));
  const int rc = ::posix_fadvise(f.fd(), 0, 0, POSIX_FADV_DONTNEED);  // returns the error, not errno
  ST_CHECK(rc == 0, "cannot drop ", path,
           " from the page cache (posix_fadvise POSIX_FADV_DONTNEED): ", std::strerror(rc));
  d.cached_after = resident_bytes(f, path, d.file_bytes);
  return d;
}

}  // namespace scaletrain::data
