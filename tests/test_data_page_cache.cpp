// The page-cache probe and drop behind run.clear_cache (data/page_cache.hpp), on a real file of the
// build tree's file system: a file just read is resident, the drop leaves none of it, reading half
// of it again brings back that half, and a missing file is an error naming it. On tmpfs the kernel
// keeps the pages (tests/mllog.cmake checks that the run then says so).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "scaletrain/core/error.hpp"
#include "scaletrain/data/page_cache.hpp"

namespace scaletrain::data {
namespace {

constexpr int64_t kFileBytes = 8 << 20;

// An 8 MiB file beside the test binary (the build tree's file system, not /tmp's), written and
// synced so that its pages are clean and may be dropped.
std::string written_file() {
  const std::string path = "page_cache_test_" + std::to_string(::getpid()) + ".bin";
  std::vector<char> bytes(kFileBytes);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::fsync(fd);
  ::close(fd);
  return path;
}

// Reads the first `bytes` with read-ahead off (POSIX_FADV_RANDOM), so that only they are cached.
void read_bytes(const std::string& path, int64_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
  std::vector<char> buf(1 << 16);
  for (int64_t done = 0; done < bytes;) {
    const ssize_t n = ::pread(fd, buf.data(), std::min<size_t>(buf.size(), static_cast<size_t>(bytes - done)), done);
    if (n <= 0) break;
    done += n;
  }
  ::close(fd);
}

TEST(PageCache, ADroppedFileIsNoLongerResidentAndAReadBringsBackWhatItRead) {
  struct statfs fs {};
  if (::statfs(".", &fs) == 0 && fs.f_type == TMPFS_MAGIC) GTEST_SKIP() << "the build tree is on tmpfs: its pages stay";
  const std::string path = written_file();
  read_bytes(path, kFileBytes);
  EXPECT_GE(page_cache_resident_bytes(path), kFileBytes * 9 / 10);

  const PageCacheDrop d = drop_from_page_cache(path);
  EXPECT_EQ(d.file_bytes, kFileBytes);
  EXPECT_GE(d.cached_before, kFileBytes * 9 / 10);
  EXPECT_EQ(d.cached_after, 0);
  EXPECT_EQ(page_cache_resident_bytes(path), 0);

  // Half the file read again: that half resident, the rest not.
  read_bytes(path, kFileBytes / 2);
  const int64_t half = page_cache_resident_bytes(path);
  EXPECT_GE(half, kFileBytes / 2);
  EXPECT_LT(half, kFileBytes / 2 + kFileBytes / 16);
  std::filesystem::remove(path);
}

TEST(PageCache, AnEmptyFileHasNothingResident) {
  const std::string path = "page_cache_empty_" + std::to_string(::getpid()) + ".bin";
  std::ofstream(path).close();
  EXPECT_EQ(page_cache_resident_bytes(path), 0);
  EXPECT_EQ(drop_from_page_cache(path).cached_after, 0);
  std::filesystem::remove(path);
}

TEST(PageCache, AMissingFileIsAnErrorNamingIt) {
  try {
    drop_from_page_cache("/nonexistent/scaletrain-data.h5");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open /nonexistent/scaletrain-data.h5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace scaletrain::data
