// The binding check's warnings (train/binding_check.hpp): ranks that share cores on one host are
// named with their masks, ranks on different hosts or with disjoint masks are not, and a rank with
// more compute threads than cores is named. The gathering across real ranks is tested end to end in
// tests/binding.cmake.
#include <gtest/gtest.h>

#include "scaletrain/train/binding_check.hpp"

namespace scaletrain::train {
namespace {

CpuMask mask_of(std::initializer_list<int> cpus) {
  CpuMask m;
  for (int c : cpus) m.set(c);
  return m;
}

RankBinding rank_on(int rank, const char* host, std::initializer_list<int> cpus, int threads = 1) {
  return RankBinding{rank, host, mask_of(cpus), threads};
}

TEST(CpuMask, PrintsRangesAsTasksetDoes) {
  EXPECT_EQ(mask_of({0, 1, 2, 3, 8}).to_string(), "0-3,8");
  EXPECT_EQ(mask_of({5}).to_string(), "5");
  EXPECT_EQ(mask_of({0, 2, 4, 5}).to_string(), "0,2,4-5");
  EXPECT_EQ(mask_of({1023}).to_string(), "1023");
  EXPECT_EQ(CpuMask().to_string(), "none");
  EXPECT_EQ(mask_of({0, 63, 64, 65}).count(), 4);
  EXPECT_TRUE(mask_of({0, 64}).overlaps(mask_of({64})));
  EXPECT_FALSE(mask_of({0, 1}).overlaps(mask_of({2, 3})));
}

TEST(CpuMask, ThisProcessHasAtLeastOneCpu) { EXPECT_GE(CpuMask::of_this_process().count(), 1); }

TEST(BindingCheck, RanksWithCoresOfTheirOwnGetNoWarning) {
  EXPECT_TRUE(binding_warnings({rank_on(0, "a", {0}), rank_on(1, "a", {1}), rank_on(2, "a", {2, 3}, 2)}).empty());
  // The same cores on different hosts are different cores.
  EXPECT_TRUE(binding_warnings({rank_on(0, "a", {0, 1}), rank_on(1, "b", {0, 1})}).empty());
}

TEST(BindingCheck, RanksSharingCoresAreNamedWithTheirMasks) {
  const auto w = binding_warnings({rank_on(0, "a", {0, 1}), rank_on(1, "a", {0, 1}), rank_on(2, "b", {0, 1})});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("ranks 0 and 1 on host a share cores (rank 0: 0-1, rank 1: 0-1)"), std::string::npos) << w[0];
}

TEST(BindingCheck, OverlapsChainIntoOneGroup) {
  // 0 overlaps 1, 1 overlaps 2, 0 and 2 are disjoint: all three compete for cores.
  const auto w = binding_warnings({rank_on(0, "a", {0, 1}), rank_on(1, "a", {1, 2}), rank_on(2, "a", {2, 3}),
                                   rank_on(3, "a", {4})});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("ranks 0, 1 and 2 on host a share cores (rank 0: 0-1, rank 1: 1-2, rank 2: 2-3)"),
            std::string::npos)
      << w[0];
}

TEST(BindingCheck, ManyUnboundRanksAreListedShortly) {
  std::vector<RankBinding> ranks;
  for (int r = 0; r < 20; ++r) ranks.push_back(rank_on(r, "node7", {0, 1, 2, 3}));
  const auto w = binding_warnings(ranks);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("ranks 0, 1, 2, 3, 4, 5, 6, 7 and 12 more on host node7"), std::string::npos) << w[0];
  EXPECT_LT(w[0].size(), 400u) << w[0];
}

TEST(BindingCheck, MoreThreadsThanCoresIsNamed) {
  const auto w = binding_warnings({rank_on(0, "a", {0}, 4), rank_on(1, "a", {1, 2}, 2)});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("rank 0 on host a runs 4 compute threads on 1 core (mask 0)"), std::string::npos) << w[0];
}

}  // namespace
}  // namespace scaletrain::train
