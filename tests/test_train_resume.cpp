// Resume compatibility (train/resume.hpp): a refusal lists every differing identity key with both
// values; run.resume_force overrides the forceable keys and never the model; and where a resumed
// run may continue mid-epoch; and the parameter checksum the ranks compare sees any one changed float.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "scaletrain/train/checkpoint.hpp"
#include "scaletrain/train/resume.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::train;
using scaletrain::testing::error_of;

namespace {

// 1003 floats: whole 32-byte blocks for the four lanes, then a 12-byte tail.
TEST(Checkpoint, ChecksumChangesWithAnyOneFloat) {
  std::vector<float> v(1003);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.001f * static_cast<float>(i) - 0.3f;
  const uint64_t base = parameter_checksum(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(parameter_checksum(v.data(), static_cast<int64_t>(v.size())), base);
  for (size_t i = 0; i < v.size(); ++i) {
    std::vector<float> w = v;
    uint32_t bits;
    std::memcpy(&bits, &w[i], sizeof bits);
    bits ^= 1u << (i % 32);  // every bit position, in floats of every lane and of the tail
    std::memcpy(&w[i], &bits, sizeof bits);
    ASSERT_NE(parameter_checksum(w.data(), static_cast<int64_t>(w.size())), base) << "float " << i;
  }
  std::vector<float> swapped = v;
  std::swap(swapped[0], swapped[2]);  // the same words in other lanes
  EXPECT_NE(parameter_checksum(swapped.data(), static_cast<int64_t>(swapped.size())), base);
  EXPECT_NE(parameter_checksum(v.data(), 1002), base);
}

TEST(Resume, IdenticalKeysPass) {
  RunConfig cfg;
  const IdentityKeys k = identity_keys(cfg, 60000);
  EXPECT_TRUE(check_resume_compatible(k, k, "ckpt", false).empty());
  EXPECT_EQ(k[1].second, "sgd");  // enum values unquoted
}

TEST(Resume, RefusalNamesEveryKeyWithBothValues) {
  RunConfig a, b;
  b.batch = 256;
  b.epochs = 5;
  const std::string e = error_of([&] {
    check_resume_compatible(identity_keys(a, 60000), identity_keys(b, 60000), "run/checkpoints/step-7", false);
  });
  EXPECT_NE(e.find("cannot resume from run/checkpoints/step-7"), std::string::npos) << e;
  EXPECT_NE(e.find("train.batch: checkpoint 128, this run 256"), std::string::npos) << e;
  EXPECT_NE(e.find("train.epochs: checkpoint 2, this run 5"), std::string::npos) << e;
  EXPECT_EQ(e.find("train.seed"), std::string::npos) << e;
}

TEST(Resume, ForceOverridesForceableKeysOnly) {
  RunConfig a, b;
  b.epochs = 5;
  b.data_path = "other.h5";
  const auto forced = check_resume_compatible(identity_keys(a, 60000), identity_keys(b, 60000), "c", true);
  ASSERT_EQ(forced.size(), 2u);
  b.model = "mlp";
  const std::string e =
      error_of([&] { check_resume_compatible(identity_keys(a, 60000), identity_keys(b, 60000), "c", true); });
  EXPECT_NE(e.find("model.name: checkpoint lenet, this run mlp (the parameters do not fit; cannot be forced)"),
            std::string::npos)
      << e;
}

TEST(Resume, SyncBatchNormAndNoDecayAreIdentityKeys) {
  RunConfig a, b;
  b.sync_bn = true;
  b.no_decay = {optim::NoDecayCategory::norm};
  const auto forced = check_resume_compatible(identity_keys(a, 60000), identity_keys(b, 60000), "c", true);
  ASSERT_EQ(forced.size(), 2u);
  EXPECT_NE(forced[0].find("model.sync_bn: checkpoint false, this run true"), std::string::npos) << forced[0];
  EXPECT_NE(forced[1].find("optimizer.no_decay: checkpoint [], this run [\"norm\"]"), std::string::npos) << forced[1];
  const std::string e =
      error_of([&] { check_resume_compatible(identity_keys(a, 60000), identity_keys(b, 60000), "c", false); });
  EXPECT_NE(e.find("model.sync_bn"), std::string::npos) << e;
  // A checkpoint written before these keys existed implies their defaults.
  IdentityKeys older = identity_keys(a, 60000);
  std::erase_if(older, [](const auto& kv) { return kv.first == "model.sync_bn" || kv.first == "optimizer.no_decay"; });
  EXPECT_TRUE(check_resume_compatible(older, identity_keys(a, 60000), "c", false).empty());
  EXPECT_EQ(check_resume_compatible(older, identity_keys(b, 60000), "c", true).size(), 2u);
}

TEST(Resume, MidEpochOnlyWhereThePositionCarriesOver) {
  CheckpointMeta saved;
  saved.position = {30, 0, 30};
  saved.global_batch = 128;
  saved.world_size = 2;
  saved.data_mode = "stage";
  RunConfig cfg;
  std::string why;
  EXPECT_TRUE(resume_mid_epoch(saved, cfg, 3, why));  // stage mode: any rank count
  cfg.data_mode = data::LoaderMode::stream;
  saved.data_mode = "stream";
  EXPECT_TRUE(resume_mid_epoch(saved, cfg, 2, why));
  EXPECT_FALSE(resume_mid_epoch(saved, cfg, 3, why));
  EXPECT_NE(why.find("rank count changed from 2 to 3"), std::string::npos) << why;
  cfg.batch = 64;
  EXPECT_FALSE(resume_mid_epoch(saved, cfg, 2, why));
  EXPECT_NE(why.find("train.batch changed from 128 to 64"), std::string::npos) << why;
}

}  // namespace
