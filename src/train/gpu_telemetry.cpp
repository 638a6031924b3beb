// NVML through dlopen: the few types, constants and entry points GpuTelemetry reads
// (train/gpu_telemetry.hpp).
#include "scaletrain/train/gpu_telemetry.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace scaletrain::train {
namespace {

// NVML's declarations, written out here because nvml.h is not needed to build scaletrain (the CUDA
// toolkit of a build machine may lack it). Names and values from NVIDIA's NVML API Reference
// (https://docs.nvidia.com/deploy/nvml-api/): nvmlReturn_t (NVML_SUCCESS = 0), nvmlClockType_t
// (NVML_CLOCK_SM = 1), nvmlTemperatureSensors_t (NVML_TEMPERATURE_GPU = 0), nvmlMemory_t (v1: total,
// free, used, in bytes), nvmlDeviceGetPowerUsage in milliwatts, the nvmlClocksEventReasons bits
// below. The enums are C enums, passed as int.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1;
constexpr int NVML_TEMPERATURE_GPU = 0;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

using InitFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using HandleByBusIdFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using ClockFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using TemperatureFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using PowerFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using MemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using ReasonsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);

// nvmlClocksEventReasons (NVML API Reference, group nvmlClocksEventReasons; 0x200 and 0x400 are
// newer, as listed by NVIDIA's cuda.bindings.nvml.ClocksEventReasons).
struct ReasonBit {
  uint64_t bit;
  const char* name;
};
constexpr ReasonBit kReasonBits[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
    {0x200, "board_limit"},
    {0x400, "reliability"},
};

constexpr const char* kNoGpu = "no GPU";

}  // namespace

std::vector<std::string> clock_event_reason_names(uint64_t mask) {
  std::vector<std::string> names;
  for (int b = 0; b < 64; ++b) {
    const uint64_t bit = uint64_t{1} << b;
    if (!(mask & bit)) continue;
    std::string name = "bit" + std::to_string(b);
    for (const ReasonBit& r : kReasonBits)
      if (r.bit == bit) name = r.name;
    names.push_back(name);
  }
  return names;
}

std::string gpu_telemetry_status(const GpuTelemetry& t) {
  if (t.available()) return "on";
  if (t.note() == kNoGpu) return "";
  return "off: " + t.note();
}

std::string gpu_telemetry_line(const std::vector<std::string>& status) {
  std::vector<int> on, off;
  for (size_t r = 0; r < status.size(); ++r) {
    if (status[r] == "on")
      on.push_back(static_cast<int>(r));
    else if (!status[r].empty())
      off.push_back(static_cast<int>(r));
  }
  if (on.empty() && off.empty()) return "";
  const std::string what = "SM clock, temperature, power, memory in use and clock event reasons per logging interval";
  if (off.empty())
    return "gpu telemetry: NVML on all " + std::to_string(on.size()) + " rank" + (on.size() > 1 ? "s" : "") + " (" +
           what + ")";
  std::string line = "gpu telemetry: off on " + std::to_string(off.size()) + " of " + std::to_string(status.size()) +
                     " ranks (rank " + std::to_string(off[0]) + ": " + status[static_cast<size_t>(off[0])].substr(5) +
                     ")";
  if (!on.empty()) line += "; NVML on the other " + std::to_string(on.size()) + " (" + what + ")";
  return line;
}

struct GpuTelemetry::Impl {
  void* lib = nullptr;
  bool initialized = false;  // nvmlInit_v2 succeeded: nvmlShutdown at the end
  nvmlDevice_t device = nullptr;
  std::string note;
  double max_clock_mhz = GpuSample::kUnknown;

  InitFn init = nullptr, shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  HandleByBusIdFn handle_by_bus_id = nullptr;
  ClockFn clock = nullptr, max_clock = nullptr;
  TemperatureFn temperature = nullptr;
  PowerFn power = nullptr;
  MemoryFn memory = nullptr;
  ReasonsFn reasons = nullptr;  // optional: NVML before 4.304 has neither name

  // "Unknown Error (code 999)"
  std::string error(nvmlReturn_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return std::string(s ? s : "NVML error") + " (code " + std::to_string(rc) + ")";
  }
  // Looks up `name`; a missing one is added to `missing`.
  template <class Fn>
  void find(Fn& fn, const char* name, std::string& missing) {
    fn = reinterpret_cast<Fn>(dlsym(lib, name));
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  }
  bool open(const std::string& bus_id, const std::string& path);
};

bool GpuTelemetry::Impl::open(const std::string& bus_id, const std::string& path) {
  if (bus_id.empty()) {
    note = kNoGpu;
    return false;
  }
  lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    note = "cannot load NVML: " + std::string(e ? e : path);
    return false;
  }
  error_string = reinterpret_cast<ErrorStringFn>(dlsym(lib, "nvmlErrorString"));
  reasons = reinterpret_cast<ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!reasons) reasons = reinterpret_cast<ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  std::string missing;
  find(init, "nvmlInit_v2", missing);
  find(shutdown, "nvmlShutdown", missing);
  find(handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2", missing);
  find(clock, "nvmlDeviceGetClockInfo", missing);
  find(max_clock, "nvmlDeviceGetMaxClockInfo", missing);
  find(temperature, "nvmlDeviceGetTemperature", missing);
  find(power, "nvmlDeviceGetPowerUsage", missing);
  find(memory, "nvmlDeviceGetMemoryInfo", missing);
  if (!missing.empty()) {
    note = "NVML '" + path + "' lacks " + missing + " (too old an NVML, or not NVIDIA's)";
    return false;
  }
  if (const nvmlReturn_t rc = init(); rc != NVML_SUCCESS) {
    note = "nvmlInit_v2 failed: " + error(rc);
    return false;
  }
  initialized = true;
  if (const nvmlReturn_t rc = handle_by_bus_id(bus_id.c_str(), &device); rc != NVML_SUCCESS) {
    note = "NVML has no GPU at PCI bus id " + bus_id + ": " + error(rc);
    device = nullptr;
    return false;
  }
  unsigned int mhz = 0;
  if (max_clock(device, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS) max_clock_mhz = mhz;
  note = "NVML '" + path + "', GPU " + bus_id;
  return true;
}

GpuTelemetry::GpuTelemetry(const std::string& pci_bus_id, const std::string& library)
    : impl_(std::make_unique<Impl>()) {
  std::string path = library;
  if (path.empty()) {
    const char* env = std::getenv("SCALETRAIN_NVML_LIBRARY");
    path = env && *env ? env : kDefaultNvmlLibrary;
  }
  impl_->open(pci_bus_id, path);
}

GpuTelemetry::~GpuTelemetry() {
  if (impl_->initialized) impl_->shutdown();
  if (impl_->lib) dlclose(impl_->lib);
}

bool GpuTelemetry::available() const { return impl_->device != nullptr; }
const std::string& GpuTelemetry::note() const { return impl_->note; }

std::optional<GpuSample> GpuTelemetry::sample() {
  Impl& m = *impl_;
  if (!m.device) return std::nullopt;
  GpuSample s;
  s.sm_clock_max_mhz = m.max_clock_mhz;
  unsigned int v = 0;
  if (m.clock(m.device, NVML_CLOCK_SM, &v) == NVML_SUCCESS) s.sm_clock_mhz = v;
  if (m.temperature(m.device, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) s.temperature_c = v;
  if (m.power(m.device, &v) == NVML_SUCCESS) s.power_w = v / 1e3;  // milliwatts
  nvmlMemory_t mem{};
  if (m.memory(m.device, &mem) == NVML_SUCCESS) s.memory_used_mib = static_cast<double>(mem.used) / (1 << 20);
  unsigned long long reasons = 0;
  if (m.reasons && m.reasons(m.device, &reasons) == NVML_SUCCESS && reasons < (uint64_t{1} << 53))
    s.clock_event_reasons = static_cast<int64_t>(reasons);
  return s;
}

}  // namespace scaletrain::train
