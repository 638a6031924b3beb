// Support for the GPU tests (tests/cuda.cmake): a fixture that skips when this machine has no CUDA
// device and otherwise owns a CUDA backend, and host <-> device helpers for typed vectors.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/dtype.hpp"

namespace scaletrain::testing {

// CUDA devices this process sees; 0 when cudaGetDeviceCount fails (no driver, no device).
inline int cuda_devices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// Every GPU test derives from this: it is reported SKIPPED (not passed) without a device.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device on this machine (cudaGetDeviceCount)";
    BackendOptions o;
    o.kind = DeviceKind::cuda;
    backend = make_backend(o);
  }
  void TearDown() override {
    if (backend) backend->synchronize();
  }
  std::unique_ptr<Backend> backend;
};

// A device tensor holding `values` (copied on the compute stream, which is synchronized).
template <class T>
Tensor to_device(Backend& b, const std::vector<T>& values, const std::string& name) {
  const int64_t n = static_cast<int64_t>(values.size());
  Tensor host({n}, dtype_of<T>::value, name + " (host)");
  if (n) std::memcpy(host.raw(), values.data(), values.size() * sizeof(T));
  Tensor dev = b.empty({n}, dtype_of<T>::value, name);
  b.copy_async(b.compute_stream(), dev, host);
  b.compute_stream().synchronize();
  return dev;
}

// The values of a device tensor once the compute stream's work so far has finished.
template <class T>
std::vector<T> to_host(Backend& b, const Tensor& dev) {
  const Tensor host = b.download(dev);
  std::vector<T> out(static_cast<size_t>(host.numel()));
  if (!out.empty()) std::memcpy(out.data(), host.raw(), out.size() * sizeof(T));
  return out;
}

template <class T>
T* dptr(const Tensor& t) {
  return t.device_data<T>();
}

}  // namespace scaletrain::testing
