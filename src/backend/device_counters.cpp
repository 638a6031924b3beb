// DeviceCounters: the arithmetic of counts and the relaxed atomic reads (backend/device_counters.hpp).
#include "scaletrain/backend/device_counters.hpp"

namespace scaletrain {

DeviceCounts& DeviceCounts::operator+=(const DeviceCounts& o) {
  calls += o.calls;
  host_syncs += o.host_syncs;
  background_syncs += o.background_syncs;
  allocations += o.allocations;
  copies_h2d += o.copies_h2d;
  bytes_h2d += o.bytes_h2d;
  copies_d2h += o.copies_d2h;
  bytes_d2h += o.bytes_d2h;
  return *this;
}

DeviceCounts operator-(DeviceCounts a, const DeviceCounts& b) {
  a.calls -= b.calls;
  a.host_syncs -= b.host_syncs;
  a.background_syncs -= b.background_syncs;
  a.allocations -= b.allocations;
  a.copies_h2d -= b.copies_h2d;
  a.bytes_h2d -= b.bytes_h2d;
  a.copies_d2h -= b.copies_d2h;
  a.bytes_d2h -= b.bytes_d2h;
  return a;
}

void DeviceCounters::copy_to_device(int64_t bytes) {
  copies_h2d_.fetch_add(1, std::memory_order_relaxed);
  bytes_h2d_.fetch_add(bytes, std::memory_order_relaxed);
}

void DeviceCounters::copy_to_host(int64_t bytes) {
  copies_d2h_.fetch_add(1, std::memory_order_relaxed);
  bytes_d2h_.fetch_add(bytes, std::memory_order_relaxed);
}

DeviceCounts DeviceCounters::read() const {
  constexpr auto r = std::memory_order_relaxed;
  DeviceCounts c;
  c.calls = calls_.load(r);
  c.host_syncs = host_syncs_.load(r);
  c.background_syncs = background_syncs_.load(r);
  c.allocations = allocations_.load(r);
  c.copies_h2d = copies_h2d_.load(r);
  c.bytes_h2d = bytes_h2d_.load(r);
  c.copies_d2h = copies_d2h_.load(r);
  c.bytes_d2h = bytes_d2h_.load(r);
  return c;
}

DeviceCounters& DeviceCounters::unattached() {
  static DeviceCounters c;
  return c;
}

}  // namespace scaletrain
