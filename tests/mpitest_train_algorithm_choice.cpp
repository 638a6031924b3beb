// run.cudnn_algorithms' orchestration (train/algorithm_choice.hpp) at any rank count, on a recording
// AlgorithmTuning: the CUDA backend that implements it for real needs a GPU, the steps around it do
// not. Rank 0 alone times, and every rank pins rank 0's book whatever its own timing would say; a
// resumed run pins its checkpoint's book before the model is built, without timing; a run pinned to
// another run's run.json pins that book, even when resuming; heuristic times nothing; a bad file is
// every rank's error. Also the book's JSON round trip and the start-up line.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/train/algorithm_choice.hpp"
#include "scaletrain/train/errors.hpp"

using namespace scaletrain;
using namespace scaletrain::train;

namespace {

AlgorithmRecord record(const std::string& key, const std::string& name, double ms, const std::string& first,
                       double first_ms) {
  AlgorithmRecord r;
  r.key = key;
  r.op = "conv fwd";
  r.shape = "conv{" + key + "}";
  r.algo = name == "ALGO_1" ? 1 : 0;
  r.name = name;
  r.math = "fma";
  r.workspace_bytes = 4096;
  r.how = ms >= 0 ? AlgorithmMode::timed : AlgorithmMode::heuristic;
  r.time_ms = ms;
  r.heuristic_name = first;
  r.heuristic_time_ms = first_ms;
  return r;
}

AlgorithmBook book_of(std::vector<AlgorithmRecord> records) {
  AlgorithmBook b;
  b.library = "cuDNN 9.19.0";
  b.device = "NVIDIA H200";
  for (AlgorithmRecord& r : records) b.put(std::move(r));
  return b;
}

// What the trainer sees of a backend: how ops are told to choose, and what they then run. Its
// timing gives each rank another book, so that a rank running its own would show.
class RecordingTuning final : public AlgorithmTuning {
 public:
  explicit RecordingTuning(int rank) : rank_(rank) {}
  void choose_algorithms(AlgorithmMode mode) override {
    mode_ = mode;
    pinned_ = {};
    from_.clear();
  }
  void pin_algorithms(AlgorithmBook book, std::string from) override {
    mode_ = AlgorithmMode::pinned;
    pinned_ = std::move(book);
    from_ = std::move(from);
  }
  AlgorithmBook time_algorithms() override {
    ++timed;
    return book_of({record("a", rank_ == 0 ? "ALGO_1" : "ALGO_0", 1.0, "ALGO_0", 2.5),
                    record("b", "ALGO_0", 0.5, "ALGO_0", 0.5)});
  }
  AlgorithmBook algorithms() const override { return pinned_; }

  AlgorithmMode mode_ = AlgorithmMode::timed;
  AlgorithmBook pinned_;
  std::string from_;
  int timed = 0;

 private:
  int rank_;
};

class AlgorithmChoiceOnRanks : public ::testing::Test {
 protected:
  void SetUp() override { world = comm::make_mpi_communicator(MPI_COMM_WORLD); }
  // A run.json as the app writes it (operators.algorithms is algorithm_choice_json's), on rank 0 only.
  std::string write_run_json(const nlohmann::json& algorithms) {
    // Rank 0's name, as every rank has the same setting.
    std::string path = "/tmp/st_algorithms_" + std::to_string(getpid()) + ".json";
    broadcast_string(*world, path, 0);
    if (world->rank() == 0) std::ofstream(path) << nlohmann::json{{"operators", {{"algorithms", algorithms}}}}.dump();
    return path;
  }
  std::unique_ptr<comm::Communicator> world;
};

TEST_F(AlgorithmChoiceOnRanks, AutoHasRankZeroTimeAndEveryRankPinItsBook) {
  RecordingTuning tuning(world->rank());
  AlgorithmChoice c;
  int asked = 0;
  const auto checkpoint = [&] {
    ++asked;
    return std::pair<std::string, std::string>{};
  };
  EXPECT_FALSE(pin_algorithms_before_build(*world, tuning, "auto", checkpoint, c));
  EXPECT_EQ(tuning.mode_, AlgorithmMode::heuristic) << "the first build takes the heuristic's choices";
  EXPECT_EQ(asked, world->rank() == 0 ? 1 : 0);
  EXPECT_TRUE(time_algorithms_after_build(*world, tuning, c)) << "the model is built again";
  EXPECT_EQ(tuning.timed, world->rank() == 0 ? 1 : 0) << "only rank 0 times";
  EXPECT_EQ(tuning.mode_, AlgorithmMode::pinned);
  EXPECT_EQ(tuning.from_, "rank 0's timing");
  ASSERT_NE(tuning.pinned_.find("a"), nullptr);
  EXPECT_EQ(tuning.pinned_.find("a")->name, "ALGO_1") << "rank 0's book on every rank";
  EXPECT_EQ(tuning.pinned_.device, "NVIDIA H200");
  EXPECT_EQ(c.source, "timed");
  c.book = tuning.algorithms();
  if (world->rank() == 0) {
    EXPECT_GE(c.probe_s, 0);
    const std::string line = algorithm_choice_line(c);
    EXPECT_NE(line.find("algorithms: run.cudnn_algorithms = auto -> timed on rank 0 (2 problems, 1 not the "
                        "heuristic's first; 1.500 ms against the heuristic's 3.000 ms, once per problem"),
              std::string::npos)
        << line;
    const nlohmann::json j = algorithm_choice_json(c);
    EXPECT_EQ(j["source"], "timed");
    EXPECT_EQ(j["problems"], 2);
    EXPECT_EQ(j["differ"], 1);
    EXPECT_DOUBLE_EQ(j["timed_ms"].get<double>(), 1.5);
    EXPECT_DOUBLE_EQ(j["heuristic_ms"].get<double>(), 3.0);
    EXPECT_FALSE(j["probe_ms"].is_null());
  }
}

TEST_F(AlgorithmChoiceOnRanks, HeuristicTimesNothing) {
  RecordingTuning tuning(world->rank());
  AlgorithmChoice c;
  EXPECT_FALSE(pin_algorithms_before_build(*world, tuning, "heuristic", [] { return std::pair<std::string, std::string>{}; }, c));
  EXPECT_FALSE(time_algorithms_after_build(*world, tuning, c));
  EXPECT_EQ(tuning.timed, 0);
  EXPECT_EQ(tuning.mode_, AlgorithmMode::heuristic);
  EXPECT_EQ(algorithm_choice_line(c), "algorithms: run.cudnn_algorithms = heuristic -> the libraries' heuristic, "
                                      "untimed (0 problems)");
}

TEST_F(AlgorithmChoiceOnRanks, AResumedRunPinsItsCheckpointsBookWithoutTiming) {
  RecordingTuning tuning(world->rank());
  const AlgorithmBook saved = book_of({record("a", "ALGO_0", 0.7, "ALGO_0", 0.7)});
  const std::string text = algorithm_book_json(saved).dump();
  AlgorithmChoice c;
  // Only rank 0 reads the checkpoint: the others' would say nothing.
  const auto checkpoint = [&] {
    return world->rank() == 0 ? std::pair<std::string, std::string>{"run/checkpoints/step-4", text}
                              : std::pair<std::string, std::string>{};
  };
  for (const std::string setting : {"auto", "heuristic"}) {
    EXPECT_TRUE(pin_algorithms_before_build(*world, tuning, setting, checkpoint, c));
    EXPECT_FALSE(time_algorithms_after_build(*world, tuning, c));
    EXPECT_EQ(tuning.timed, 0);
    EXPECT_EQ(tuning.from_, "the resumed checkpoint run/checkpoints/step-4");
    EXPECT_TRUE(tuning.pinned_.same_choices(saved));
    EXPECT_EQ(c.source, "checkpoint");
    c.book = tuning.algorithms();
    EXPECT_NE(algorithm_choice_line(c).find("-> as the resumed checkpoint run/checkpoints/step-4 ran (1 problems), so "
                                            "that it continues bit for bit"),
              std::string::npos);
  }
}

TEST_F(AlgorithmChoiceOnRanks, APinnedRunTakesTheFilesBookEvenWhenResuming) {
  RecordingTuning tuning(world->rank());
  AlgorithmChoice earlier;
  earlier.setting = "auto";
  earlier.source = "timed";
  earlier.book = book_of({record("a", "ALGO_1", 1.0, "ALGO_0", 2.0)});
  const std::string path = write_run_json(algorithm_choice_json(earlier));
  AlgorithmChoice c;
  int asked = 0;
  const auto checkpoint = [&] {
    ++asked;
    return std::pair<std::string, std::string>{"ck", algorithm_book_json(book_of({})).dump()};
  };
  EXPECT_TRUE(pin_algorithms_before_build(*world, tuning, path, checkpoint, c));
  EXPECT_FALSE(time_algorithms_after_build(*world, tuning, c));
  EXPECT_EQ(asked + tuning.timed, 0);
  EXPECT_EQ(tuning.from_, "run.cudnn_algorithms = " + path);
  EXPECT_TRUE(tuning.pinned_.same_choices(earlier.book));
  EXPECT_EQ(tuning.pinned_.find("a")->heuristic_time_ms, 2.0) << "the record as that run timed it";
  EXPECT_EQ(c.source, "file");
  EXPECT_EQ(c.from, path);
  if (world->rank() == 0) std::remove(path.c_str());
}

TEST_F(AlgorithmChoiceOnRanks, ABadFileIsEveryRanksErrorNamingIt) {
  RecordingTuning tuning(world->rank());
  const auto error_for = [&](const std::string& path) {
    AlgorithmChoice c;
    try {
      (void)pin_algorithms_before_build(*world, tuning, path, [] { return std::pair<std::string, std::string>{}; }, c);
    } catch (const ConsistentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_for("/nonexistent/run.json").find("run.cudnn_algorithms = /nonexistent/run.json: cannot read"),
            std::string::npos);
  const std::string cpu_run = write_run_json(nullptr);
  EXPECT_NE(error_for(cpu_run).find("the run there made no such choice"), std::string::npos);
  const std::string broken = write_run_json({{"book", {{"library", "x"}}}});
  const std::string msg = error_for(broken);
  EXPECT_NE(msg.find("run.cudnn_algorithms = " + broken + ": not an algorithm book"), std::string::npos) << msg;
  if (world->rank() == 0) {
    std::remove(cpu_run.c_str());
    std::remove(broken.c_str());
  }
}

TEST(AlgorithmBookJson, RoundTripsEveryField) {
  AlgorithmRecord r = record("k", "ALGO_1", 1.25, "ALGO_0", -1);
  r.config = "00ff";
  r.deterministic = false;
  const AlgorithmBook b = book_of({r, record("h", "ALGO_0", -1, "ALGO_0", -1)});
  const nlohmann::json j = algorithm_book_json(b);
  EXPECT_TRUE(j["records"][0]["heuristic_time_ms"].is_null()) << "untimed is null in JSON";
  const AlgorithmBook back = algorithm_book_of_json(nlohmann::json::parse(j.dump()), "test");
  EXPECT_EQ(algorithm_book_json(back), j);
  EXPECT_TRUE(back.same_choices(b));
  EXPECT_EQ(back.records[0].how, AlgorithmMode::timed);
  EXPECT_EQ(back.records[1].how, AlgorithmMode::heuristic);
  EXPECT_LT(back.records[0].heuristic_time_ms, 0);
}

}  // namespace
