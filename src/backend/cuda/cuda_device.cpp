// The CUDA device's identity and the library versions (backend/cuda/cuda_device.hpp).
#include "scaletrain/backend/cuda/cuda_device.hpp"

#include <cstdio>

#include "scaletrain/core/check_cuda.hpp"

namespace scaletrain::cuda {
namespace {

// CUDA encodes 1000 * major + 10 * minor.
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// cuDNN 9 and NCCL >= 2.9 encode 10000 * major + 100 * minor + patch; NCCL <= 2.8: 1000 * major + ...
std::string three_part_version(long v) {
  const long major_unit = v >= 10000 ? 10000 : 1000;
  return std::to_string(v / major_unit) + "." + std::to_string(v % major_unit / 100) + "." + std::to_string(v % 100);
}

}  // namespace

void use_device(int device) {
  int current = -1;
  ST_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) ST_CUDA_CHECK(cudaSetDevice(device));
}

int visible_device_count() {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver) {
    (void)cudaGetLastError();  // not sticky: clear it so a later launch check does not report it
    return 0;
  }
  ST_CUDA_CHECK(rc);
  return n;
}

std::string pci_bus_id(int device) {
  char id[32] = {};
  ST_CUDA_CHECK(cudaDeviceGetPCIBusId(id, static_cast<int>(sizeof id), device));
  return id;
}

std::string library_versions() {
  int runtime = 0, driver = 0, nccl = 0;
  ST_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  ST_CUDA_CHECK(cudaDriverGetVersion(&driver));
  ST_NCCL_CHECK(ncclGetVersion(&nccl));
  const long cudnn = static_cast<long>(cudnnGetVersion());
  const long cublas = static_cast<long>(cublasLtGetVersion());
  return "CUDA runtime " + cuda_version(runtime) + " / driver " + (driver ? cuda_version(driver) : "none") +
         ", cuDNN " + three_part_version(cudnn) + ", NCCL " + three_part_version(nccl) + ", cuBLAS " +
         three_part_version(cublas);
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  ST_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

int multiprocessor_count(int device) {
  int sms = 0;
  ST_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

std::string describe_device(int device) {
  cudaDeviceProp prop{};
  ST_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  return "cuda " + std::to_string(device) + " (" + prop.name + ", " + memory + ", PCI " + pci_bus_id(device) + ", " +
         library_versions() + ")";
}

}  // namespace scaletrain::cuda
