// Resume compatibility (train/resume.hpp): a refusal lists every differing identity key with both
// values; run.resume_force overrides the forceable keys and never the model; and where a resumed
// run may continue mid-epoch.
#include <gtest/gtest.h>

#include "scaletrain/train/resume.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::train;
using scaletrain::testing::error_of;

namespace {

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
