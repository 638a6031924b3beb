// Error construction: prefixes every internal error's message with rank, host, source file and
// line; a UserError is its message alone.
#include "scaletrain/core/error.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace scaletrain {
namespace {
std::atomic<int> g_rank{-1};
}

void set_error_rank(int rank) { g_rank.store(rank); }
int error_rank() { return g_rank.load(); }

const std::string& error_host() {
  static const std::string host = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return std::string("unknown-host");
    return std::string(buf);
  }();
  return host;
}

namespace {
// "src/train/config.cpp:74" from the compiler's path.
std::string source_location(const char* file, int line) {
  const char* base = std::strstr(file, "/src/");
  if (!base) base = std::strstr(file, "/include/");
  if (!base) base = std::strstr(file, "/tests/");
  if (!base) base = std::strstr(file, "/data-tools/");
  if (!base) base = std::strstr(file, "/perf/");
  const char* shown = base ? base + 1 : file;
  return std::string(shown) + ":" + std::to_string(line);
}
}  // namespace

[[noreturn]] void throw_error(const char* file, int line, const char* library, const std::string& message) {
  const int rank = error_rank();
  std::string where = source_location(file, line);
  std::string text = "[rank " + (rank < 0 ? std::string("?") : std::to_string(rank)) + " on " + error_host() + "] " +
                     where + ": " + library + ": " + message;
  throw Error(std::move(text), message, library, std::move(where));
}

[[noreturn]] void throw_user_error(const char* file, int line, const std::string& message) {
  throw UserError(message, source_location(file, line));
}

}  // namespace scaletrain
