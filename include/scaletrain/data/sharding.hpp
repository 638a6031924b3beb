// Which sample each rank reads at each step. One global permutation per epoch, drawn from
// (seed, epoch), is cut into global batches of world x batch positions; rank r takes positions
// [(step*world + r)*batch, +batch) of it. So the union of the ranks' batches at a step is exactly
// the batch a single rank with world x batch would see: N ranks train the same model as 1 rank.
// The remainder that does not fill a global batch is dropped (default) or padded by wrapping.
#pragma once
#include <cstdint>
#include <vector>

namespace scaletrain::data {

struct ShardPlan {
  int64_t num_samples = 0;
  int world = 1;
  int64_t batch = 1;  // per rank
  bool drop_remainder = true;
  int64_t steps_per_epoch = 0;  // equal on every rank
  int64_t per_rank() const { return steps_per_epoch * batch; }
};

ShardPlan make_shard_plan(int64_t num_samples, int world, int64_t batch, bool drop_remainder);

// A permutation of [0, n) from (seed, epoch); the identity when shuffle is false. Deterministic
// across platforms (splitmix64 + Fisher-Yates, no std distributions).
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, bool shuffle = true);

// The permutation position of row `row` of rank `rank`'s batch at `step` (may be >= n when
// padding: the caller wraps it modulo n).
inline int64_t global_position(const ShardPlan& p, int rank, int64_t step, int64_t row) {
  return (step * p.world + rank) * p.batch + row;
}

// How many rows of that batch are real samples (not wrap-around padding).
int64_t valid_rows(const ShardPlan& p, int rank, int64_t step);

// The sample indices rank `rank` reads in one epoch, in order (steps_per_epoch x batch).
std::vector<int64_t> rank_epoch_indices(const ShardPlan& p, int rank, const std::vector<int64_t>& permutation);

uint64_t splitmix64(uint64_t& state);

}  // namespace scaletrain::data
