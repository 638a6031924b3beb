// A backend's algorithm choices, the auto workspace rule and the refusal of pinned records
// (backend/algorithm_book.hpp).
#include "scaletrain/backend/algorithm_book.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain {
namespace {

std::string mib_decimal(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

int64_t mib_ceil(int64_t bytes) { return (bytes + (1 << 20) - 1) >> 20; }

}  // namespace

std::string algorithm_mode_name(AlgorithmMode m) {
  switch (m) {
    case AlgorithmMode::heuristic:
      return "heuristic";
    case AlgorithmMode::timed:
      return "timed";
    case AlgorithmMode::pinned:
      return "pinned";
  }
  return "?";
}

const AlgorithmRecord* AlgorithmBook::find(const std::string& key) const {
  for (const AlgorithmRecord& r : records)
    if (r.key == key) return &r;
  return nullptr;
}

void AlgorithmBook::put(AlgorithmRecord r) {
  for (AlgorithmRecord& old : records)
    if (old.key == r.key) {
      old = std::move(r);
      return;
    }
  records.push_back(std::move(r));
}

bool AlgorithmBook::same_choices(const AlgorithmBook& other) const {
  if (records.size() != other.records.size()) return false;
  for (const AlgorithmRecord& r : records) {
    const AlgorithmRecord* o = other.find(r.key);
    if (!o || o->algo != r.algo || o->math != r.math || o->config != r.config) return false;
  }
  return true;
}

double AlgorithmBook::timed_ms() const {
  double sum = 0;
  for (const AlgorithmRecord& r : records) {
    if (r.time_ms < 0) return -1;
    sum += r.time_ms;
  }
  return sum;
}

double AlgorithmBook::heuristic_ms() const {
  double sum = 0;
  for (const AlgorithmRecord& r : records) {
    if (r.heuristic_time_ms < 0) return -1;
    sum += r.heuristic_time_ms;
  }
  return sum;
}

int AlgorithmBook::differ_from_heuristic() const {
  return static_cast<int>(
      std::count_if(records.begin(), records.end(), [](const AlgorithmRecord& r) { return r.name != r.heuristic_name; }));
}

std::string algorithm_record_line(const AlgorithmRecord& r) {
  std::ostringstream os;
  char ms[48];
  os << r.op << " " << r.shape << ": " << r.name << " (";
  if (r.time_ms >= 0) {
    std::snprintf(ms, sizeof ms, "timed %.3f ms", r.time_ms);
    os << ms;
  } else {
    os << "heuristic, untimed";
  }
  if (r.how != AlgorithmMode::heuristic && !r.heuristic_name.empty()) {
    if (r.heuristic_name == r.name) {
      os << ", the heuristic's first too";
    } else {
      os << ", the heuristic's first " << r.heuristic_name;
      if (r.heuristic_time_ms >= 0) {
        std::snprintf(ms, sizeof ms, " %.3f ms", r.heuristic_time_ms);
        os << ms;
      }
    }
  }
  os << "; " << mib_decimal(r.workspace_bytes) << " MiB workspace, " << (r.deterministic ? "deterministic" : "nondeterministic");
  if (!r.math.empty()) os << ", " << r.math << " math";
  os << ")";
  return os.str();
}

int64_t workspace_margin_bytes(int64_t total_bytes) { return std::max(int64_t{1} << 30, total_bytes / 10); }

int64_t auto_workspace_limit(const DeviceMemoryState& m) {
  const int64_t available = m.free_bytes + m.cached_free_bytes + m.stream_workspace_bytes;
  return std::max<int64_t>(0, available - workspace_margin_bytes(m.total_bytes));
}

std::string workspace_setting_text(bool automatic, int64_t limit_bytes) {
  if (automatic) return "run.cudnn_workspace_mb = auto (" + mib_decimal(limit_bytes) + " MiB free less the margin)";
  if (limit_bytes % (1 << 20) == 0) return "run.cudnn_workspace_mb = " + std::to_string(limit_bytes >> 20);
  return "run.cudnn_workspace_mb = " + mib_decimal(limit_bytes) + " (" + std::to_string(limit_bytes) + " bytes)";
}

const AlgorithmRecord& pinned_record(const AlgorithmBook& book, const std::string& key, const std::string& what,
                                     const std::string& from) {
  const AlgorithmRecord* r = book.find(key);
  ST_CHECK(r != nullptr, what, ": ", from, " has no algorithm for this problem (", key, "; it holds ",
           book.records.size(), "): pin to a run of the same model, batch, precision and train.allow_tf32, or set "
           "run.cudnn_algorithms = auto");
  return *r;
}

void check_pinned_record(const AlgorithmRecord& r, int64_t needed_bytes, int64_t limit_bytes, bool limit_auto,
                         bool deterministic, const std::string& from) {
  const std::string what = r.op + " " + r.shape + ": algorithm " + r.name + " pinned by " + from;
  ST_CHECK(needed_bytes >= 0, what, " is not supported for this problem by the library here (",
           "another library version or GPU?): set run.cudnn_algorithms = auto");
  ST_CHECK(!deterministic || r.deterministic, what,
           " is nondeterministic, and run.deterministic = true: pin to a run with run.deterministic = true, set "
           "run.deterministic = false, or set run.cudnn_algorithms = auto");
  if (needed_bytes <= limit_bytes) return;
  std::ostringstream os;
  os << what << " needs " << needed_bytes << " bytes (" << mib_decimal(needed_bytes) << " MiB) of workspace, more than "
     << workspace_setting_text(limit_auto, limit_bytes) << " allows: ";
  if (limit_auto)
    os << "free device memory (a smaller train.batch) or set run.cudnn_algorithms = auto to choose again";
  else
    os << "set run.cudnn_workspace_mb = auto or at least " << mib_ceil(needed_bytes);
  ST_FAIL(os.str());
}

}  // namespace scaletrain
