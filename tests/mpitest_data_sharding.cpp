// The loader's sharding contract at any rank count: in one epoch every training sample is read
// exactly once across ranks (drop: all but the dropped remainder; pad: all, plus wrap-around),
// shards are disjoint and equal, the order repeats for the same seed and changes with the epoch,
// and each batch's bytes and labels are the file's rows for the indices it reports. Stage mode runs
// with each rank's own copy, with one copy per node in shared memory, and with every rank a node of
// its own (data.node_ranks = 1: the exchange between nodes); data.shuffle = node with each node's
// share in a stage_dir keeps the once-per-epoch contract.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/loader.hpp"
#include "scaletrain/data/synthetic.hpp"

using namespace scaletrain;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// 1003 training samples of 6x5x2 (a prime count: no rank count divides it).
std::string shared_file() {
  static std::string path;
  if (!path.empty()) return path;
  long long id = world_rank() == 0 ? static_cast<long long>(getpid()) : 0;
  MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  path = (std::filesystem::temp_directory_path() / ("st-sharding-" + std::to_string(id) + ".h5")).string();
  if (world_rank() == 0) {
    data::SyntheticOptions o;
    o.sample_shape = {6, 5, 2};
    o.train_samples = 1003;
    o.test_samples = 77;
    o.classes = 7;
    o.seed = 5;
    data::write_synthetic_dataset(path, o);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

// This rank's indices for one epoch, after checking each batch against the file.
std::vector<int64_t> epoch_indices(data::DataLoader& l, int64_t epoch, const data::DatasetFile& f) {
  std::vector<int64_t> out;
  l.start_epoch(epoch);
  const size_t sb = f.sample_bytes(l.options().split);
  std::vector<uint8_t> row(sb);
  int64_t steps = 0;
  while (const data::Batch* b = l.next()) {
    EXPECT_EQ(b->step_in_epoch, steps);
    for (int64_t r = 0; r < l.options().batch; ++r) {
      const int64_t idx = b->indices[static_cast<size_t>(r)];
      f.read_samples(l.options().split, idx, 1, row.data());
      EXPECT_EQ(0, std::memcmp(row.data(), static_cast<const uint8_t*>(b->samples.raw()) + r * sb, sb))
          << "sample bytes of index " << idx;
      int32_t label = -1;
      f.read_labels(l.options().split, idx, 1, &label);
      EXPECT_EQ(label, b->labels.data<int32_t>()[r]) << "label of index " << idx;
      out.push_back(idx);
    }
    l.release(b);
    ++steps;
  }
  EXPECT_EQ(steps, l.steps_per_epoch());
  return out;
}

std::vector<int64_t> gather_all(const std::vector<int64_t>& mine) {
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(world_size()));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int c : counts) EXPECT_EQ(c, n) << "shards must be equal";
  std::vector<int64_t> all(static_cast<size_t>(n) * static_cast<size_t>(world_size()));
  MPI_Allgather(mine.data(), n, MPI_INT64_T, all.data(), n, MPI_INT64_T, MPI_COMM_WORLD);
  return all;
}

// Every rank's indices (any number per rank) on every rank, sorted.
std::vector<int64_t> gather_sorted(const std::vector<int64_t>& mine) {
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(world_size())), displs(static_cast<size_t>(world_size()));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<int64_t> all(static_cast<size_t>(displs.back() + counts.back()));
  MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, MPI_COMM_WORLD);
  std::sort(all.begin(), all.end());
  return all;
}

// "stage" (each rank its own copy), "stage_node" (one copy per node), "stage_exchange" (every rank a
// node: the parts are exchanged) or "stream".
data::LoaderOptions options_for(const std::string& how) {
  data::LoaderOptions o;
  o.path = shared_file();
  o.mode = data::parse_loader_mode(how == "stream" ? "stream" : "stage");
  if (how == "stage_node" || how == "stage_exchange") {
    o.comm = MPI_COMM_WORLD;
    o.stage.node_ranks = how == "stage_exchange" ? 1 : 0;
  }
  return o;
}

class Sharding : public ::testing::TestWithParam<std::string> {};

TEST_P(Sharding, EverySampleOncePerEpochDropRemainder) {
  const std::string path = shared_file();
  data::DatasetFile f(path);
  data::LoaderOptions o = options_for(GetParam());
  o.batch = 8;
  o.prefetch = 3;
  o.shuffle_buffer = 50;
  data::DataLoader l(o, world_rank(), world_size());
  const int64_t global = 8 * world_size();
  ASSERT_EQ(l.steps_per_epoch(), 1003 / global);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const auto all = gather_all(epoch_indices(l, epoch, f));
    std::map<int64_t, int> seen;
    for (int64_t i : all) ++seen[i];
    EXPECT_EQ(static_cast<int64_t>(all.size()), l.steps_per_epoch() * global);
    for (const auto& [i, c] : seen) {
      EXPECT_EQ(c, 1) << "sample " << i << " read " << c << " times in epoch " << epoch;
      EXPECT_TRUE(i >= 0 && i < 1003);
    }
    EXPECT_EQ(seen.size(), all.size()) << "shards overlap";
  }
}

TEST_P(Sharding, PaddedEpochCoversEverySample) {
  const std::string path = shared_file();
  data::DatasetFile f(path);
  data::LoaderOptions o = options_for(GetParam());
  o.batch = 16;
  o.drop_remainder = false;
  data::DataLoader l(o, world_rank(), world_size());
  const int64_t global = 16 * world_size();
  ASSERT_EQ(l.steps_per_epoch(), (1003 + global - 1) / global);
  l.start_epoch(0);
  std::vector<int64_t> mine;
  int64_t valid = 0;
  while (const data::Batch* b = l.next()) {
    for (int64_t r = 0; r < l.valid_rows(*b); ++r) mine.push_back(b->indices[static_cast<size_t>(r)]);
    valid += l.valid_rows(*b);
    l.release(b);
  }
  long long total = valid;
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, 1003) << "valid rows over all ranks must count every sample once";
  if (o.shuffle) {
    // Valid rows are exactly the samples, each once (the padding repeats some).
    const std::vector<int64_t> all = gather_sorted(mine);
    if (GetParam() != "stream") {
      ASSERT_EQ(all.size(), 1003u);
      for (int64_t i = 0; i < 1003; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i);
    }
  }
}

TEST_P(Sharding, SameSeedSameOrderNewEpochNewOrder) {
  const std::string path = shared_file();
  data::DatasetFile f(path);
  data::LoaderOptions o = options_for(GetParam());
  o.batch = 4;
  data::DataLoader a(o, world_rank(), world_size()), b(o, world_rank(), world_size());
  const auto a0 = epoch_indices(a, 0, f), b0 = epoch_indices(b, 0, f), a1 = epoch_indices(a, 1, f);
  EXPECT_EQ(a0, b0) << "same seed and epoch must give the same order";
  EXPECT_NE(a0, a1) << "a new epoch must reshuffle";
  o.seed = 43;
  data::DataLoader c(o, world_rank(), world_size());
  EXPECT_NE(a0, epoch_indices(c, 0, f)) << "another seed must give another order";
}

INSTANTIATE_TEST_SUITE_P(Modes, Sharding, ::testing::Values("stage", "stage_node", "stage_exchange", "stream"),
                         [](const auto& info) { return info.param; });

TEST(ShardingStage, UnionOfRanksIsTheOneRankBatch) {
  // Stage mode: the ranks' batches at a step are the 1-rank global batch split in rank order.
  const std::string path = shared_file();
  data::DatasetFile f(path);
  data::LoaderOptions o;
  o.path = path;
  o.batch = 6;
  data::DataLoader mine(o, world_rank(), world_size());
  data::LoaderOptions one = o;
  one.batch = 6 * world_size();
  data::DataLoader single(one, 0, 1);
  const auto all = gather_all(epoch_indices(mine, 3, f));
  const auto ref = epoch_indices(single, 3, f);
  // all is rank-major: rank r's steps; ref is step-major with ranks' rows consecutive.
  const int64_t steps = mine.steps_per_epoch();
  ASSERT_EQ(steps, single.steps_per_epoch());
  for (int r = 0; r < world_size(); ++r)
    for (int64_t s = 0; s < steps; ++s)
      for (int64_t i = 0; i < 6; ++i)
        EXPECT_EQ(all[static_cast<size_t>((r * steps + s) * 6 + i)],
                  ref[static_cast<size_t>((s * world_size() + r) * 6 + i)]);
}

// A directory every rank sees (rank 0 makes it), for data.stage_dir.
std::string shared_stage_dir() {
  long long id = world_rank() == 0 ? static_cast<long long>(getpid()) : 0;
  MPI_Bcast(&id, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  const auto dir = std::filesystem::temp_directory_path() / ("st-stage-dir-" + std::to_string(id));
  if (world_rank() == 0) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir.string();
}

// data.shuffle = node at data.node_ranks = 0 (one node), 1 (every rank a node) and 2.
class NodeShuffle : public ::testing::TestWithParam<int> {};

TEST_P(NodeShuffle, EverySampleOncePerEpochFromTheNodesShares) {
  const std::string dir = shared_stage_dir();
  data::DatasetFile f(shared_file());
  data::LoaderOptions o = options_for("stage_node");
  o.stage.node_ranks = GetParam();
  o.stage.dir = dir;
  o.stage.node_shuffle = true;
  o.batch = 8;
  o.drop_remainder = false;
  data::DataLoader padded(o, world_rank(), world_size());
  o.drop_remainder = true;
  data::DataLoader dropped(o, world_rank(), world_size());
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the shares' files are unlinked once every rank has opened them";
  EXPECT_EQ(dropped.stats().staging.where, dir + " (node-local share)");
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    // Padded: the valid rows over all ranks are every sample exactly once.
    padded.start_epoch(epoch);
    std::vector<int64_t> mine;
    while (const data::Batch* b = padded.next()) {
      for (int64_t r = 0; r < padded.valid_rows(*b); ++r) mine.push_back(b->indices[static_cast<size_t>(r)]);
      padded.release(b);
    }
    const std::vector<int64_t> all = gather_sorted(mine);
    ASSERT_EQ(all.size(), 1003u) << "epoch " << epoch;
    for (int64_t i = 0; i < 1003; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i) << "epoch " << epoch;
    // Dropped remainder: equal shards, no sample twice, and each batch holds the file's rows.
    const auto seen = gather_all(epoch_indices(dropped, epoch, f));
    std::map<int64_t, int> times;
    for (int64_t i : seen) ++times[i];
    EXPECT_EQ(times.size(), seen.size()) << "a sample came twice in epoch " << epoch;
    EXPECT_EQ(static_cast<int64_t>(seen.size()), dropped.steps_per_epoch() * 8 * world_size());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(NodeRanks, NodeShuffle, ::testing::Values(0, 1, 2));

TEST(ShardingStage, NodeCopyStagesEachByteOnceAndHoldsTheFilesRows) {
  const std::string path = shared_file();
  data::DatasetFile f(path);
  data::LoaderOptions o = options_for("stage_exchange");
  o.batch = 5;
  data::DataLoader l(o, world_rank(), world_size());
  const data::StagingReport& r = l.stats().staging;
  long long read = r.read_bytes;
  MPI_Allreduce(MPI_IN_PLACE, &read, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(read, r.split_bytes) << "the ranks together read the split exactly once";
  EXPECT_EQ(r.split_bytes, 1003 * (6 * 5 * 2 + 4));
  EXPECT_EQ(r.nodes, world_size());
  EXPECT_EQ(r.exchanged_bytes, r.split_bytes - r.node_read_bytes);
  EXPECT_EQ(r.where, "node shared memory");
  epoch_indices(l, 0, f);  // every batch row against the file
}

struct Cleanup : ::testing::Environment {
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) std::filesystem::remove(shared_file());
  }
};
const auto* const kCleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

}  // namespace
