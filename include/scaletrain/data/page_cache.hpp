// A file's pages in this machine's page cache: how many bytes of it are resident (mincore over a
// read-only mapping), and dropping them (posix_fadvise POSIX_FADV_DONTNEED), so that a run can
// start from a cold cache as MLPerf HPC's cache_clear asks. The kernel drops clean, unmapped pages
// only (so the file is written back first); a file system that holds files in memory (tmpfs) keeps
// them.
#pragma once
#include <cstdint>
#include <string>

namespace scaletrain::data {

struct PageCacheDrop {
  int64_t file_bytes = 0;
  int64_t cached_before = 0;  // bytes of the file resident before the drop
  int64_t cached_after = 0;   // and after it
};

// Bytes of `path` resident in the page cache (whole pages, at most the file's size rounded up to
// a page). Throws Error naming the file where it cannot be opened or mapped.
int64_t page_cache_resident_bytes(const std::string& path);

// Asks the kernel to drop `path` from the page cache and measures what was resident before and
// after. Throws Error naming the file where it cannot be opened or the advice is refused.
PageCacheDrop drop_from_page_cache(const std::string& path);

}  // namespace scaletrain::data
