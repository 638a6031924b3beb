// GPU telemetry through NVML loaded at run time (train/gpu_telemetry.hpp), against the fake NVML of
// tests/support/fake_nvml.c (no driver NVML exists here): values read and converted to the log's units
// (mW -> W, bytes -> MiB), the library named by SCALETRAIN_NVML_LIBRARY, NVML's older entry-point name;
// and no telemetry, with a note saying why, for a missing library, a missing symbol, a failed
// nvmlInit, a bus id NVML does not know and a rank without a GPU. Also the start-up line, the reason
// names, and the interval's per-rank samples in metrics.jsonl (present with telemetry, absent without).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/gpu_telemetry.hpp"
#include "scaletrain/train/interval_reducer.hpp"
#include "scaletrain/train/run_log.hpp"

namespace scaletrain::train {
namespace {

constexpr const char* kBusId = "0000:3B:00.0";  // as cudaDeviceGetPCIBusId writes it; the fake's GPU

// The fake's call counters. Held open for the test, so that GpuTelemetry's dlopen gets this same
// instance of the library (dlopen counts references) and its dlclose does not unload the counts.
class FakeNvml {
 public:
  explicit FakeNvml(const char* library) : lib_(dlopen(library, RTLD_NOW | RTLD_LOCAL)) {}
  ~FakeNvml() {
    if (lib_) dlclose(lib_);
  }
  int calls(const char* what) const {
    auto f = lib_ ? reinterpret_cast<int (*)(const char*)>(dlsym(lib_, "fake_nvml_calls")) : nullptr;
    return f ? f(what) : -1;
  }

 private:
  void* lib_;
};

TEST(GpuTelemetry, ReadsTheGpuInTheLogsUnits) {
  GpuTelemetry t(kBusId, FAKE_NVML);
  ASSERT_TRUE(t.available()) << t.note();
  EXPECT_EQ(t.note(), std::string("NVML '") + FAKE_NVML + "', GPU " + kBusId);
  const std::optional<GpuSample> a = t.sample();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->sm_clock_mhz, 1755);
  EXPECT_EQ(a->sm_clock_max_mhz, 1980);
  EXPECT_EQ(a->power_w, 312.5);           // 312500 mW
  EXPECT_EQ(a->memory_used_mib, 5632.0);  // bytes -> MiB
  EXPECT_EQ(a->clock_event_reasons, 0);
  const double first_temperature = a->temperature_c;
  const std::optional<GpuSample> b = t.sample();  // sampled again: the fake's temperature has risen
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->temperature_c, first_temperature + 5);
  EXPECT_EQ(b->clock_event_reasons, 0x24);
  EXPECT_EQ(clock_event_reason_names(static_cast<uint64_t>(b->clock_event_reasons)),
            (std::vector<std::string>{"sw_power_cap", "sw_thermal_slowdown"}));
  EXPECT_EQ(gpu_telemetry_status(t), "on");
}

TEST(GpuTelemetry, ShutsNvmlDownOnce) {
  const FakeNvml fake(FAKE_NVML);
  const int inits = fake.calls("init"), shutdowns = fake.calls("shutdown");
  ASSERT_GE(inits, 0);
  { GpuTelemetry t(kBusId, FAKE_NVML); }
  EXPECT_EQ(fake.calls("init"), inits + 1);
  EXPECT_EQ(fake.calls("shutdown"), shutdowns + 1);
}

TEST(GpuTelemetry, EnvironmentNamesTheLibrary) {
  ASSERT_EQ(setenv("SCALETRAIN_NVML_LIBRARY", FAKE_NVML, 1), 0);
  GpuTelemetry t(kBusId);
  unsetenv("SCALETRAIN_NVML_LIBRARY");
  EXPECT_TRUE(t.available()) << t.note();
}

TEST(GpuTelemetry, OlderNvmlNameForTheReasons) {
  GpuTelemetry t("00000000:3b:00.0", FAKE_NVML_THROTTLE_NAME);  // NVML's own bus id format
  ASSERT_TRUE(t.available()) << t.note();
  EXPECT_EQ(t.sample()->clock_event_reasons, 0);
  EXPECT_EQ(t.sample()->clock_event_reasons, 0x24);
}

TEST(GpuTelemetry, AbsentLibraryMeansNoTelemetry) {
  GpuTelemetry t(kBusId, "/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(t.available());
  EXPECT_NE(t.note().find("cannot load NVML: /nonexistent/libnvidia-ml.so.1: cannot open shared object file"),
            std::string::npos)
      << t.note();
  EXPECT_FALSE(t.sample().has_value());
  EXPECT_EQ(gpu_telemetry_status(t), "off: " + t.note());
}

TEST(GpuTelemetry, MissingSymbolIsNamed) {
  GpuTelemetry t(kBusId, FAKE_NVML_NO_TEMPERATURE);
  EXPECT_FALSE(t.available());
  EXPECT_EQ(t.note(), std::string("NVML '") + FAKE_NVML_NO_TEMPERATURE +
                          "' lacks nvmlDeviceGetTemperature (too old an NVML, or not NVIDIA's)");
  EXPECT_FALSE(t.sample().has_value());
}

TEST(GpuTelemetry, FailedInitMeansNoTelemetry) {
  ASSERT_EQ(setenv("FAKE_NVML_INIT_RESULT", "9", 1), 0);
  const FakeNvml fake(FAKE_NVML);
  const int shutdowns = fake.calls("shutdown");
  ASSERT_GE(shutdowns, 0);
  {
    GpuTelemetry t(kBusId, FAKE_NVML);
    EXPECT_FALSE(t.available());
    EXPECT_EQ(t.note(), "nvmlInit_v2 failed: Driver Not Loaded (code 9)");
  }
  unsetenv("FAKE_NVML_INIT_RESULT");
  EXPECT_EQ(fake.calls("shutdown"), shutdowns);  // no nvmlShutdown without a successful init
}

TEST(GpuTelemetry, UnknownBusIdMeansNoTelemetry) {
  GpuTelemetry t("0000:AF:00.0", FAKE_NVML);
  EXPECT_FALSE(t.available());
  EXPECT_EQ(t.note(), "NVML has no GPU at PCI bus id 0000:AF:00.0: Not Found (code 6)");
  EXPECT_FALSE(t.sample().has_value());
}

TEST(GpuTelemetry, NoGpuLoadsNothing) {
  GpuTelemetry t("", FAKE_NVML);  // cpu and sim: Backend::device_id() is empty
  EXPECT_FALSE(t.available());
  EXPECT_EQ(t.note(), "no GPU");
  EXPECT_EQ(gpu_telemetry_status(t), "");
}

TEST(GpuTelemetry, StartupLine) {
  EXPECT_EQ(gpu_telemetry_line({"", ""}), "");
  EXPECT_EQ(gpu_telemetry_line({"on", "on"}),
            "gpu telemetry: NVML on all 2 ranks (SM clock, temperature, power, memory in use and clock event "
            "reasons per logging interval)");
  EXPECT_EQ(gpu_telemetry_line({"off: cannot load NVML: x", "off: cannot load NVML: x"}),
            "gpu telemetry: off on 2 of 2 ranks (rank 0: cannot load NVML: x)");
  const std::string mixed = gpu_telemetry_line({"on", "on", "off: nvmlInit_v2 failed: y"});
  EXPECT_EQ(mixed.rfind("gpu telemetry: off on 1 of 3 ranks (rank 2: nvmlInit_v2 failed: y); NVML on the other 2", 0),
            0u)
      << mixed;
}

TEST(GpuTelemetry, ReasonNames) {
  EXPECT_EQ(clock_event_reason_names(0), std::vector<std::string>{});
  EXPECT_EQ(clock_event_reason_names(0x1 | 0x8 | 0x40 | (uint64_t{1} << 20)),
            (std::vector<std::string>{"gpu_idle", "hw_slowdown", "hw_thermal_slowdown", "bit20"}));
}

// One rank (this test runs as one process): the interval keeps the rank's sample, and RunLog writes it
// as `gpus`, leaving out what NVML did not give; without a sample there is no `gpus` at all.
TEST(GpuTelemetry, IntervalLogCarriesTheSampleOnlyWhenThereIsOne) {
  auto world = comm::make_mpi_communicator(MPI_COMM_WORLD);
  ASSERT_EQ(world->size(), 1);
  const std::string dir = (std::filesystem::temp_directory_path() / "scaletrain-telemetry-log").string();
  std::filesystem::remove_all(dir);
  IntervalReducer reducer(*world, 64, 0, 0);
  PhaseTimers timers;
  timers.add(Phase::step, 0.5);
  nn::LossResult sums{1.0, 32, 64};
  GpuSample g;
  g.sm_clock_mhz = 1410;
  g.temperature_c = 71;
  g.clock_event_reasons = 0x40;  // power, memory and the max clock unknown
  const IntervalTimings with = reducer.close_interval(0, 10, sums, timers, 0.1, g);
  const IntervalTimings without = reducer.close_interval(0, 20, sums, timers, 0.1, std::nullopt);
  ASSERT_EQ(with.gpus.size(), 1u);
  EXPECT_EQ(with.gpus[0].temperature_c, 71);
  EXPECT_TRUE(std::isnan(with.gpus[0].power_w));
  EXPECT_EQ(with.mean[static_cast<int>(Phase::step)], 0.5);  // the phase times still reduce
  EXPECT_TRUE(without.gpus.empty());
  {
    RunLog log(true, dir, RunConfig{});
    log.interval(with);
    log.interval(without);
  }
  std::ifstream in(dir + "/metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const nlohmann::json a = nlohmann::json::parse(line);
  ASSERT_TRUE(a.contains("gpus"));
  EXPECT_EQ(a["gpus"], nlohmann::json::parse(R"([{"rank": 0, "sm_clock_mhz": 1410.0, "temperature_c": 71.0,
      "clock_event_reasons": 64, "clock_event_reason_names": ["hw_thermal_slowdown"]}])"));
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_FALSE(nlohmann::json::parse(line).contains("gpus"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace scaletrain::train
