// run.cpu_bf16_gemm = auto (train/bf16_gemm_choice.hpp) with injected timings, at any rank count: the
// faster way over the model's ops (each shape weighted by its count, ties to bf16); every rank takes rank
// 0's choice whatever its own timing says; a resumed run takes its checkpoint's choice without timing;
// a setting is taken as it is; a failing timing is every rank's error; the line and run.json show the times.
#include <gtest/gtest.h>
#include <mpi.h>

#include <stdexcept>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/bf16_gemm_choice.hpp"
#include "scaletrain/train/errors.hpp"

using namespace scaletrain;
using namespace scaletrain::train;

namespace {

std::vector<Bf16GemmShapeTiming> timings(double dense_bf16, double dense_f32, double conv_bf16, double conv_f32) {
  return {{"inner_product 64x400->120 bf16", 1, dense_bf16, dense_f32}, {"conv 1x1 bf16", 3, conv_bf16, conv_f32}};
}

// Timings under which `faster` wins clearly.
std::vector<Bf16GemmShapeTiming> favouring(Bf16GemmCompute faster) {
  return faster == Bf16GemmCompute::f32 ? timings(2e-3, 1e-3, 2e-3, 1e-3) : timings(1e-3, 2e-3, 1e-3, 2e-3);
}

TEST(FasterBf16Gemm, WeighsEachShapeByItsCount) {
  double bf16_s = 0, f32_s = 0;
  // Per shape the dense layer favours bf16 by 1 ms and the convolution f32 by 0.5 ms, three times.
  EXPECT_EQ(faster_bf16_gemm(timings(1e-3, 2e-3, 1e-3, 0.5e-3), bf16_s, f32_s), Bf16GemmCompute::f32);
  EXPECT_DOUBLE_EQ(bf16_s, 4e-3);
  EXPECT_DOUBLE_EQ(f32_s, 3.5e-3);
  EXPECT_EQ(faster_bf16_gemm(timings(1e-3, 3e-3, 1e-3, 0.5e-3), bf16_s, f32_s), Bf16GemmCompute::bf16);
  EXPECT_EQ(faster_bf16_gemm(timings(1e-3, 1e-3, 1e-3, 1e-3), bf16_s, f32_s), Bf16GemmCompute::bf16) << "a tie";
  EXPECT_EQ(faster_bf16_gemm({}, bf16_s, f32_s), Bf16GemmCompute::bf16) << "no GEMM-shaped ops";
}

class Bf16GemmChoiceOnRanks : public ::testing::Test {
 protected:
  void SetUp() override { world = comm::make_mpi_communicator(MPI_COMM_WORLD); }
  std::unique_ptr<comm::Communicator> world;
  int timed = 0, asked = 0;  // this rank's calls of the timing and of the checkpoint's choice
  // Each rank's own timing favours another way than rank 0's.
  Bf16GemmChoice choose(Bf16GemmCompute setting, Bf16GemmCompute rank0_faster, std::string saved = "") {
    const Bf16GemmCompute other =
        rank0_faster == Bf16GemmCompute::f32 ? Bf16GemmCompute::bf16 : Bf16GemmCompute::f32;
    return choose_bf16_gemm(
        *world, setting,
        [&] {
          ++asked;
          return saved;
        },
        [&] {
          ++timed;
          return favouring(world->rank() == 0 ? rank0_faster : other);
        });
  }
};

TEST_F(Bf16GemmChoiceOnRanks, EveryRankTakesRankZerosTimedChoice) {
  for (Bf16GemmCompute faster : {Bf16GemmCompute::f32, Bf16GemmCompute::bf16}) {
    timed = asked = 0;
    const Bf16GemmChoice c = choose(Bf16GemmCompute::automatic, faster);
    EXPECT_EQ(c.compute, faster);
    EXPECT_EQ(c.setting, Bf16GemmCompute::automatic);
    EXPECT_EQ(timed, world->rank() == 0 ? 1 : 0) << "only rank 0 times";
    if (world->rank() != 0) continue;
    EXPECT_EQ(c.source, "timed");
    EXPECT_EQ(c.timings.size(), 2u);
    EXPECT_GT(c.bf16_s, 0);
    EXPECT_GT(c.f32_s, 0);
  }
}

TEST_F(Bf16GemmChoiceOnRanks, AResumedRunTakesItsCheckpointsChoiceWithoutTiming) {
  const Bf16GemmChoice c = choose(Bf16GemmCompute::automatic, Bf16GemmCompute::bf16, "f32");
  EXPECT_EQ(c.compute, Bf16GemmCompute::f32);
  EXPECT_EQ(timed, 0);
  EXPECT_EQ(asked, world->rank() == 0 ? 1 : 0);
  if (world->rank() == 0) {
    EXPECT_EQ(c.source, "checkpoint");
    EXPECT_NE(bf16_gemm_line(c).find("auto -> f32 (as the resumed checkpoint ran"), std::string::npos)
        << bf16_gemm_line(c);
    EXPECT_EQ(bf16_gemm_json(c)["source"], "checkpoint");
  }
}

TEST_F(Bf16GemmChoiceOnRanks, ASettingIsTakenAsItIs) {
  for (Bf16GemmCompute set : {Bf16GemmCompute::f32, Bf16GemmCompute::bf16}) {
    const Bf16GemmChoice c = choose(set, Bf16GemmCompute::bf16, "f32");
    EXPECT_EQ(c.compute, set);
    EXPECT_EQ(c.source, "set");
  }
  EXPECT_EQ(timed + asked, 0);
}

TEST_F(Bf16GemmChoiceOnRanks, AFailingTimingIsEveryRanksError) {
  std::string message;
  try {
    (void)choose_bf16_gemm(
        *world, Bf16GemmCompute::automatic, [] { return std::string(); },
        []() -> std::vector<Bf16GemmShapeTiming> { throw std::runtime_error("no memory for the probe"); });
  } catch (const ConsistentError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("no memory for the probe"), std::string::npos) << message;
}

TEST(Bf16GemmChoiceReport, LineAndJsonShowTheTimes) {
  Bf16GemmChoice c;
  c.compute = Bf16GemmCompute::f32;
  c.source = "timed";
  c.timings = timings(2e-3, 1e-3, 1e-3, 0.5e-3);
  (void)faster_bf16_gemm(c.timings, c.bf16_s, c.f32_s);
  c.probe_s = 0.25;
  const std::string line = bf16_gemm_line(c);
  EXPECT_NE(line.find("bf16 GEMMs: run.cpu_bf16_gemm = auto -> f32 (timed at 2 shapes, 4 ops: oneDNN bf16 5.000 ms, "
                      "f32 on widened bf16 2.500 ms per step"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("250 ms"), std::string::npos) << line;
  const nlohmann::json j = bf16_gemm_json(c);
  EXPECT_EQ(j["setting"], "auto");
  EXPECT_EQ(j["compute"], "f32");
  EXPECT_DOUBLE_EQ(j["bf16_ms"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["f32_ms"].get<double>(), 2.5);
  ASSERT_EQ(j["shapes"].size(), 2u);
  EXPECT_EQ(j["shapes"][1]["count"], 3);
}

}  // namespace
