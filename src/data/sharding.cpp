// Global per-epoch shuffle and the equal, disjoint per-rank shards.
#include "scaletrain/data/sharding.hpp"

#include <algorithm>
#include <numeric>

#include "scaletrain/core/error.hpp"

namespace scaletrain::data {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

ShardPlan make_shard_plan(int64_t num_samples, int world, int64_t batch, bool drop_remainder) {
  ST_CHECK(world >= 1 && batch >= 1, "shard plan needs world >= 1 and batch >= 1");
  ShardPlan p;
  p.num_samples = num_samples;
  p.world = world;
  p.batch = batch;
  p.drop_remainder = drop_remainder;
  const int64_t global = static_cast<int64_t>(world) * batch;
  p.steps_per_epoch = drop_remainder ? num_samples / global : (num_samples + global - 1) / global;
  return p;
}

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  if (!shuffle) return perm;
  uint64_t state = seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(epoch) * 0x8CB92BA72F3D8DD7ull + 1;
  for (int64_t i = n - 1; i > 0; --i) {
    // Multiply-shift to [0, i]: bias below 2^-32 for any data set size here.
    const uint64_t r = splitmix64(state) >> 32;
    const int64_t j = static_cast<int64_t>((r * static_cast<uint64_t>(i + 1)) >> 32);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

int64_t valid_rows(const ShardPlan& p, int rank, int64_t step) {
  const int64_t first = global_position(p, rank, step, 0);
  return std::clamp<int64_t>(p.num_samples - first, 0, p.batch);
}

std::vector<int64_t> rank_epoch_indices(const ShardPlan& p, int rank, const std::vector<int64_t>& permutation) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(p.per_rank()));
  const int64_t n = static_cast<int64_t>(permutation.size());
  for (int64_t s = 0; s < p.steps_per_epoch; ++s)
    for (int64_t r = 0; r < p.batch; ++r)
      out.push_back(permutation[static_cast<size_t>(global_position(p, rank, s, r) % n)]);
  return out;
}

}  // namespace scaletrain::data
