// run.cpu_bf16_gemm (train/bf16_gemm_choice.hpp) with injected timings, at any rank count, through the
// mechanism run.cudnn_algorithms shares (train/rank0_choice.hpp): the faster way over the model's ops
// (each shape weighted by its count, ties to bf16); every rank takes rank 0's choice whatever its own
// timing says; a resumed run takes its checkpoint's choice without timing; a run pinned to another
// run's run.json takes that run's choice without timing or asking the checkpoint; a setting is taken as
// it is; a failing timing or a bad file is every rank's error; the line and run.json show the times.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/bf16_gemm_choice.hpp"
#include "scaletrain/train/errors.hpp"
#include "scaletrain/train/rank0_choice.hpp"

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
  Bf16GemmChoice choose(Bf16GemmCompute setting, Bf16GemmCompute rank0_faster, std::string saved = "",
                        const std::string& pin_file = "") {
    const Bf16GemmCompute other =
        rank0_faster == Bf16GemmCompute::f32 ? Bf16GemmCompute::bf16 : Bf16GemmCompute::f32;
    return choose_bf16_gemm(
        *world, setting, pin_file,
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
        *world, Bf16GemmCompute::automatic, "", [] { return std::string(); },
        []() -> std::vector<Bf16GemmShapeTiming> { throw std::runtime_error("no memory for the probe"); });
  } catch (const ConsistentError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("no memory for the probe"), std::string::npos) << message;
}

// A run.json as the app writes it (operators.cpu_bf16_gemm is bf16_gemm_json's), on rank 0 only: the
// other ranks never read it.
std::string write_run_json(comm::Communicator& world, const nlohmann::json& operators) {
  // Rank 0's name, as every rank has the same setting.
  std::string path = "/tmp/st_bf16_pin_" + std::to_string(getpid()) + ".json";
  broadcast_string(world, path, 0);
  if (world.rank() == 0) std::ofstream(path) << nlohmann::json{{"operators", operators}}.dump();
  return path;
}

TEST_F(Bf16GemmChoiceOnRanks, APinnedRunTakesTheFilesChoiceWithoutTimingOrTheCheckpoint) {
  Bf16GemmChoice earlier;
  earlier.setting = Bf16GemmCompute::automatic;
  earlier.compute = Bf16GemmCompute::f32;
  earlier.source = "timed";
  earlier.timings = favouring(Bf16GemmCompute::f32);
  const std::string path = write_run_json(*world, {{"cpu_bf16_gemm", bf16_gemm_json(earlier)}});
  // Rank 0's timing favours bf16 and the checkpoint says bf16: the file's f32 wins.
  const Bf16GemmChoice c = choose(Bf16GemmCompute::automatic, Bf16GemmCompute::bf16, "bf16", path);
  EXPECT_EQ(c.compute, Bf16GemmCompute::f32);
  EXPECT_EQ(c.source, "file") << "every rank knows where the choice came from";
  EXPECT_EQ(timed + asked, 0);
  if (world->rank() == 0) {
    EXPECT_EQ(bf16_gemm_line(c), "bf16 GEMMs: run.cpu_bf16_gemm = " + path + " -> f32 (as that run computed)");
    EXPECT_EQ(bf16_gemm_json(c)["setting"], path);
    std::remove(path.c_str());
  }
}

TEST_F(Bf16GemmChoiceOnRanks, ABadPinnedFileIsEveryRanksErrorNamingIt) {
  const auto error_for = [&](const std::string& path) {
    try {
      (void)choose(Bf16GemmCompute::automatic, Bf16GemmCompute::bf16, "", path);
    } catch (const ConsistentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = error_for("/nonexistent/run.json");
  EXPECT_NE(missing.find("run.cpu_bf16_gemm = /nonexistent/run.json: cannot read the file"), std::string::npos)
      << missing;
  const std::string none = write_run_json(*world, {{"cpu_bf16_gemm", nullptr}});
  const std::string msg = error_for(none);
  EXPECT_NE(msg.find("the run there made no such choice"), std::string::npos) << msg;
  EXPECT_EQ(timed, 0);
  if (world->rank() == 0) std::remove(none.c_str());
}

// The mechanism itself: the first source that gives a choice, asked on rank 0 only, on every rank.
TEST_F(Bf16GemmChoiceOnRanks, RankZeroTakesTheFirstSourceThatGivesAChoice) {
  int asked_first = 0, asked_second = 0, asked_third = 0;
  const Rank0Choice c = choose_on_rank0(*world, {{"checkpoint", [&] { ++asked_first; return std::string(); }},
                                                 {"file", [&] { ++asked_second; return std::string("{\"x\": 1}"); }},
                                                 {"timed", [&] { ++asked_third; return std::string("never"); }}});
  EXPECT_EQ(c.text, "{\"x\": 1}");
  EXPECT_EQ(c.source, "file");
  EXPECT_EQ(asked_first, world->rank() == 0 ? 1 : 0);
  EXPECT_EQ(asked_second, world->rank() == 0 ? 1 : 0);
  EXPECT_EQ(asked_third, 0);
  const Rank0Choice none = choose_on_rank0(*world, {{"checkpoint", [] { return std::string(); }}});
  EXPECT_EQ(none.text, "");
  EXPECT_EQ(none.source, "");
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
