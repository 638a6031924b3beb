// GpuTelemetry: this rank's GPU as the driver sees it (SM clock, temperature, power, device memory
// in use, clock event reasons), read through NVML, which is dlopen()ed at run time: no build links
// it, and where it is missing (no driver, a CPU node, a cpu or sim backend) there is no telemetry
// and no error. The trainer samples it once per logging interval (jobs/README.md, `gpus`).
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace scaletrain::train {

// The NVML library dlopen()ed when SCALETRAIN_NVML_LIBRARY does not name another.
inline constexpr const char* kDefaultNvmlLibrary = "libnvidia-ml.so.1";

// One reading of a GPU, in the units the timing logs use. A value NVML could not give (a query the
// board does not support) is NaN, and an unknown clock event reason mask is -1.
struct GpuSample {
  static constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
  double sm_clock_mhz = kUnknown;      // current SM clock
  double sm_clock_max_mhz = kUnknown;  // the board's maximum SM clock (read once)
  double temperature_c = kUnknown;     // GPU core temperature
  double power_w = kUnknown;           // board power draw
  double memory_used_mib = kUnknown;   // device memory in use by every process on the GPU and the driver
  int64_t clock_event_reasons = -1;    // NVML's bit mask (nvmlClocksEventReason*), -1 when unknown
};

class GpuTelemetry {
 public:
  // Opens NVML and finds the GPU with this PCI bus id (Backend::device_id()). Never throws: with
  // an empty bus id, no NVML library, a missing symbol, a failed nvmlInit or a bus id NVML does not
  // know, available() is false and note() says why. `library`: the library to dlopen; empty: the
  // environment's SCALETRAIN_NVML_LIBRARY, else kDefaultNvmlLibrary.
  explicit GpuTelemetry(const std::string& pci_bus_id, const std::string& library = "");
  ~GpuTelemetry();
  GpuTelemetry(const GpuTelemetry&) = delete;
  GpuTelemetry& operator=(const GpuTelemetry&) = delete;

  bool available() const;
  // Why there is no telemetry ("no GPU", "libnvidia-ml.so.1: cannot open shared object file ..."),
  // or what is read when there is ("NVML 'libnvidia-ml.so.1', GPU 00000000:3B:00.0").
  const std::string& note() const;
  // A reading now; nullopt when telemetry is absent.
  std::optional<GpuSample> sample();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// This rank's part of the start-up line: "" without a GPU (cpu, sim), "on" with telemetry, else
// "off: <note>".
std::string gpu_telemetry_status(const GpuTelemetry& t);
// Rank 0's start-up line from every rank's status (indexed by rank): "" when no rank has a GPU;
// "gpu telemetry: NVML on all 4 ranks (...)", or which ranks have none and why (the first such
// rank's note).
std::string gpu_telemetry_line(const std::vector<std::string>& status);

// The names of the reasons set in an NVML clock event reason mask, in bit order ("gpu_idle",
// "sw_power_cap", "hw_slowdown", ...); an unknown bit is "bit<N>".
std::vector<std::string> clock_event_reason_names(uint64_t mask);

}  // namespace scaletrain::train
