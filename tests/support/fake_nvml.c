/* A stand-in for the driver's NVML (libnvidia-ml.so.1), which does not exist on machines without an
 * NVIDIA driver: the entry points train/gpu_telemetry.cpp dlopen()s, with NVML's signatures and
 * return codes (NVML API Reference), answering scripted values for one GPU at PCI bus id
 * 0000:3B:00.0. tests/telemetry.cmake builds it as shared libraries in three variants:
 *   fake_nvml                   every entry point; reasons under the current name
 *   fake_nvml_throttle_name     reasons only under the older name nvmlDeviceGetCurrentClocksThrottleReasons
 *   fake_nvml_no_temperature    without nvmlDeviceGetTemperature (a missing symbol)
 * Script: the temperature rises by 5 C per call from 60 C; the SM clock is 1755 of 1980 MHz; power
 * 312.5 W (312500 mW); 5632 MiB of 80 GiB in use; clock event reasons none on the first call, then
 * sw_power_cap | sw_thermal_slowdown (0x24). FAKE_NVML_INIT_RESULT=<code> makes nvmlInit_v2 fail.
 * fake_nvml_calls("init"/"shutdown") counts calls, for the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

enum { SUCCESS = 0, ERROR_UNINITIALIZED = 1, ERROR_INVALID_ARGUMENT = 2, ERROR_NOT_FOUND = 6 };
enum { CLOCK_SM = 1, TEMPERATURE_GPU = 0 };

static struct nvmlDevice_st { int id; } the_gpu = {0};
static int inits, shutdowns, reason_calls;
#ifndef FAKE_NVML_NO_TEMPERATURE
static int temperature_calls;
#endif

int fake_nvml_calls(const char* what) {
  if (strcmp(what, "init") == 0) return inits;
  if (strcmp(what, "shutdown") == 0) return shutdowns;
  return -1;
}

const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case SUCCESS:
      return "Success";
    case ERROR_UNINITIALIZED:
      return "Uninitialized";
    case ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case ERROR_NOT_FOUND:
      return "Not Found";
    case 9:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlInit_v2(void) {
  const char* forced = getenv("FAKE_NVML_INIT_RESULT");
  if (forced && *forced) return atoi(forced);
  ++inits;
  return SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  if (shutdowns >= inits) return ERROR_UNINITIALIZED;
  ++shutdowns;
  return SUCCESS;
}

/* NVML accepts domain:bus:device.function, domain:bus:device and bus:device.function (hexadecimal). */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (inits <= shutdowns) return ERROR_UNINITIALIZED;
  if (!bus_id || !device) return ERROR_INVALID_ARGUMENT;
  if (sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return ERROR_INVALID_ARGUMENT;
  if (domain != 0 || bus != 0x3b || dev != 0 || fn != 0) return ERROR_NOT_FOUND;
  *device = &the_gpu;
  return SUCCESS;
}

static int valid(nvmlDevice_t d, const void* out) { return inits > shutdowns && d == &the_gpu && out; }

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  if (!valid(d, mhz) || type != CLOCK_SM) return ERROR_INVALID_ARGUMENT;
  *mhz = 1755;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  if (!valid(d, mhz) || type != CLOCK_SM) return ERROR_INVALID_ARGUMENT;
  *mhz = 1980;
  return SUCCESS;
}

#ifndef FAKE_NVML_NO_TEMPERATURE
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int* celsius) {
  if (!valid(d, celsius) || sensor != TEMPERATURE_GPU) return ERROR_INVALID_ARGUMENT;
  *celsius = 60 + 5 * (unsigned)temperature_calls++;
  return SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* milliwatts) {
  if (!valid(d, milliwatts)) return ERROR_INVALID_ARGUMENT;
  *milliwatts = 312500;
  return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  if (!valid(d, m)) return ERROR_INVALID_ARGUMENT;
  m->total = 80ull << 30;
  m->used = 5632ull << 20;
  m->free = m->total - m->used;
  return SUCCESS;
}

static nvmlReturn_t reasons(nvmlDevice_t d, unsigned long long* mask) {
  if (!valid(d, mask)) return ERROR_INVALID_ARGUMENT;
  *mask = reason_calls++ == 0 ? 0x0ull : 0x24ull;
  return SUCCESS;
}

#ifdef FAKE_NVML_THROTTLE_NAME
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* mask) {
  return reasons(d, mask);
}
#else
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* mask) {
  return reasons(d, mask);
}
#endif
