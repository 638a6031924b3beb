// Which GPU a rank takes (backend/device_selection.hpp), on the CPU: all devices visible -> the
// local rank's; exactly one visible -> device 0; fewer than the host's ranks or none -> an error
// that names CUDA_VISIBLE_DEVICES; the check that finds two ranks of one host on one device; and
// what run.device = auto becomes.
#include <gtest/gtest.h>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/device_selection.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::error_of;

namespace {

TEST(DeviceSelection, RankThatSeesAllDevicesTakesItsLocalRank) {
  for (int r = 0; r < 4; ++r) EXPECT_EQ(select_device(r, 4, 4), r);
  EXPECT_EQ(select_device(1, 2, 8), 1) << "more devices than ranks: still the local rank";
  EXPECT_EQ(select_device(0, 1, 4, "0,1,2,3"), 0);
}

TEST(DeviceSelection, RankThatSeesExactlyOneDeviceTakesDeviceZero) {
  // srun --gpus-per-task=1 sets CUDA_VISIBLE_DEVICES per task.
  for (int r = 0; r < 4; ++r) EXPECT_EQ(select_device(r, 4, 1, std::to_string(r)), 0);
}

TEST(DeviceSelection, FewerVisibleDevicesThanLocalRanksIsAnErrorNamingCudaVisibleDevices) {
  const std::string e = error_of([] { (void)select_device(2, 4, 2, "0,1"); });
  EXPECT_NE(e.find("4 ranks run on this host but each sees only 2 CUDA devices (CUDA_VISIBLE_DEVICES=0,1)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("start at most 2 ranks per host"), std::string::npos) << e;
  const std::string unset = error_of([] { (void)select_device(0, 3, 2); });
  EXPECT_NE(unset.find("CUDA_VISIBLE_DEVICES is not set"), std::string::npos) << unset;
}

TEST(DeviceSelection, NoVisibleDeviceIsAnError) {
  const std::string e = error_of([] { (void)select_device(0, 1, 0, ""); });
  EXPECT_NE(e.find("local rank 0 sees no CUDA device (CUDA_VISIBLE_DEVICES is not set)"), std::string::npos) << e;
  const std::string hidden = error_of([] { (void)select_device(1, 2, 0, "-1"); });
  EXPECT_NE(hidden.find("(CUDA_VISIBLE_DEVICES=-1)"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("run.device = cpu"), std::string::npos) << hidden;
}

TEST(DeviceSelection, InvalidLocalRankIsAnError) {
  EXPECT_NE(error_of([] { (void)select_device(2, 2, 2); }).find("local rank 2 of 2"), std::string::npos);
  EXPECT_NE(error_of([] { (void)select_device(-1, 2, 2); }).find("local rank -1 of 2"), std::string::npos);
}

TEST(DeviceSelection, SharedDevicesFindsTwoRanksOfOneHostOnOneDevice) {
  const std::vector<std::string> hosts{"n1", "n1", "n2", "n2"};
  const std::vector<std::string> ids{"0000:1b:00.0", "0000:1b:00.0", "0000:1b:00.0", "0000:3c:00.0"};
  const auto clashes = shared_devices(hosts, ids);
  ASSERT_EQ(clashes.size(), 1u);
  EXPECT_EQ(clashes[0], "ranks 0 and 1 on host n1 share device 0000:1b:00.0");
}

TEST(DeviceSelection, SharedDevicesIgnoresOtherHostsAndEmptyIds) {
  // The same PCI id on two hosts is two devices; cpu and sim ranks have no id.
  EXPECT_TRUE(shared_devices({"n1", "n2"}, {"0000:1b:00.0", "0000:1b:00.0"}).empty());
  EXPECT_TRUE(shared_devices({"n1", "n1", "n1"}, {"", "", ""}).empty());
  EXPECT_TRUE(shared_devices({"n1", "n1"}, {"0000:1b:00.0", "0000:3c:00.0"}).empty());
  EXPECT_TRUE(shared_devices({}, {}).empty());
}

TEST(DeviceSelection, SharedDevicesNamesEveryLaterRankOnAUsedDevice) {
  const auto clashes = shared_devices({"n1", "n1", "n1"}, {"0000:1b:00.0", "0000:1b:00.0", "0000:1b:00.0"});
  ASSERT_EQ(clashes.size(), 2u);
  EXPECT_EQ(clashes[0], "ranks 0 and 1 on host n1 share device 0000:1b:00.0");
  EXPECT_EQ(clashes[1], "ranks 0 and 2 on host n1 share device 0000:1b:00.0");
}

// auto is cuda exactly where this build has CUDA and sees a GPU (here: never without one), with the
// reason for the start-up line; an explicit device stays as it is.
TEST(DeviceResolution, AutoIsCudaExactlyWhereAGpuIsVisible) {
  EXPECT_EQ(parse_device_kind("auto"), DeviceKind::automatic);
  EXPECT_EQ(device_kind_name(DeviceKind::automatic), "auto");
  const DeviceResolution r = resolve_device_kind(DeviceKind::automatic);
  EXPECT_EQ(r.kind, visible_gpu_count() > 0 ? DeviceKind::cuda : DeviceKind::cpu) << r.reason;
  EXPECT_FALSE(r.reason.empty());
  if (gpu_library_versions().empty()) {
    EXPECT_EQ(r.reason, "this build has no CUDA backend");
  }
  for (DeviceKind k : {DeviceKind::cpu, DeviceKind::sim, DeviceKind::cuda}) {
    EXPECT_EQ(resolve_device_kind(k).kind, k);
    EXPECT_TRUE(resolve_device_kind(k).reason.empty());
  }
}

}  // namespace
