// CachingAllocator (backend/caching_allocator.hpp): best-fit reuse of freed blocks once they are
// reusable, one retry after emptying the cache, and an out-of-memory error that says what to lower.
#include "scaletrain/backend/caching_allocator.hpp"

#include <utility>

#include "scaletrain/core/error.hpp"

namespace scaletrain {

CachingAllocator::CachingAllocator(RawMemory raw, std::string device, size_t round_bytes)
    : raw_(std::move(raw)), device_(std::move(device)), round_(round_bytes) {
  ST_CHECK(raw_.allocate && raw_.free, "caching allocator of ", device_, ": raw allocate and free are required");
  ST_CHECK(round_ > 0, "caching allocator of ", device_, ": the rounding must be positive");
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard lk(mu_);
  for (auto& [bytes, c] : free_) raw_.free(c.ptr);
}

size_t CachingAllocator::round_up(size_t bytes) const {
  const size_t units = bytes == 0 ? 1 : (bytes + round_ - 1) / round_;
  return units * round_;
}

bool CachingAllocator::ready(Cached& c) {
  if (c.reusable && c.reusable()) c.reusable = nullptr;  // drops what the predicate holds (events)
  return !c.reusable;
}

void* CachingAllocator::take_cached(size_t rounded) {
  for (auto it = free_.lower_bound(rounded); it != free_.end() && it->first <= 2 * rounded; ++it) {
    if (!ready(it->second)) continue;
    void* p = it->second.ptr;
    in_use_.emplace(p, it->first);
    stats_.bytes_cached -= static_cast<int64_t>(it->first);
    stats_.bytes_in_use += static_cast<int64_t>(it->first);
    ++stats_.reuses;
    free_.erase(it);
    return p;
  }
  return nullptr;
}

CachingAllocator::Block CachingAllocator::allocate(size_t bytes, const std::string& name) {
  const size_t rounded = round_up(bytes);
  std::lock_guard lk(mu_);
  if (void* p = take_cached(rounded)) return {p, rounded};
  void* p = raw_.allocate(rounded);
  const int64_t cached_before = stats_.bytes_cached;
  if (!p && !free_.empty()) {
    free_cached_locked();
    p = raw_.allocate(rounded);
  }
  if (!p) out_of_memory(bytes, rounded, name, cached_before);
  ++stats_.raw_allocations;
  in_use_.emplace(p, rounded);
  stats_.bytes_in_use += static_cast<int64_t>(rounded);
  return {p, rounded};
}

void CachingAllocator::release(void* ptr, std::function<bool()> reusable) {
  std::lock_guard lk(mu_);
  auto it = in_use_.find(ptr);
  ST_CHECK(it != in_use_.end(), "caching allocator of ", device_, ": release of ", ptr, ", which it did not hand out");
  const size_t bytes = it->second;
  in_use_.erase(it);
  stats_.bytes_in_use -= static_cast<int64_t>(bytes);
  if (!caching_) {
    raw_free(ptr);
    return;
  }
  free_.emplace(bytes, Cached{ptr, std::move(reusable)});
  stats_.bytes_cached += static_cast<int64_t>(bytes);
}

void CachingAllocator::raw_free(void* p) {
  raw_.free(p);
  ++stats_.raw_frees;
}

void CachingAllocator::free_cached_locked() {
  bool pending = false;
  for (auto& [bytes, c] : free_) pending = pending || !ready(c);
  if (pending && raw_.wait_idle) {
    raw_.wait_idle();
    for (auto& [bytes, c] : free_) c.reusable = nullptr;
  }
  for (auto it = free_.begin(); it != free_.end();) {
    if (!ready(it->second)) {
      ++it;
      continue;
    }
    raw_free(it->second.ptr);
    stats_.bytes_cached -= static_cast<int64_t>(it->first);
    it = free_.erase(it);
  }
}

void CachingAllocator::free_cached() {
  std::lock_guard lk(mu_);
  free_cached_locked();
}

void CachingAllocator::stop_caching() {
  std::lock_guard lk(mu_);
  free_cached_locked();
  caching_ = false;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

void CachingAllocator::out_of_memory(size_t bytes, size_t rounded, const std::string& name,
                                     int64_t cached_before) const {
  const std::string cache =
      cached_before == 0 ? "nothing was cached"
                         : detail::concat(cached_before, " bytes were cached (freed, and the allocation retried once)");
  const std::string kept =
      stats_.bytes_cached == 0 ? "" : detail::concat(" (", stats_.bytes_cached, " of them kept: queued work may still use them)");
  ST_FAIL(device_, " out of memory: tensor '", name, "' needs ", bytes, " bytes (", rounded, " as allocated); ",
          stats_.bytes_in_use, " bytes are in use by other tensors and ", cache, kept,
          ": lower train.batch (the per-rank batch), or run fewer ranks per device");
}

}  // namespace scaletrain
