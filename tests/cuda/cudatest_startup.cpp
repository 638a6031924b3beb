// Starting the CUDA backend, on any machine: without a device, make_backend fails with the device
// selection's message (what was visible, what to change); with one, it takes device 0 and describes
// it. Runs without a GPU (label cuda, never skipped).
#include <gtest/gtest.h>

#include "cuda/cuda_test_support.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::testing;

namespace {

BackendOptions cuda_options() {
  BackendOptions o;
  o.kind = DeviceKind::cuda;
  return o;
}

TEST(CudaBackendStartup, WithoutADeviceItIsAClearErrorElseDeviceZero) {
  if (cuda_devices() == 0) {
    const std::string e = error_of([] { (void)make_backend(cuda_options()); });
    EXPECT_NE(e.find("local rank 0 sees no CUDA device (CUDA_VISIBLE_DEVICES"), std::string::npos) << e;
    EXPECT_NE(e.find("use run.device = cpu"), std::string::npos) << e;
    return;
  }
  auto b = make_backend(cuda_options());
  EXPECT_EQ(b->description().rfind("cuda 0 (", 0), 0u) << b->description();
  EXPECT_FALSE(b->device_id().empty());
}

TEST(CudaBackendStartup, MoreLocalRanksThanDevicesIsAnError) {
  BackendOptions o = cuda_options();
  o.local_size = cuda_devices() + 2;  // never one device per rank: two would share
  o.local_rank = 1;
  const std::string e = error_of([&] { (void)make_backend(o); });
  if (cuda_devices() == 0) {
    EXPECT_NE(e.find("sees no CUDA device"), std::string::npos) << e;
  } else if (cuda_devices() > 1) {
    EXPECT_NE(e.find("ranks would share a device"), std::string::npos) << e;
  }
}

}  // namespace
