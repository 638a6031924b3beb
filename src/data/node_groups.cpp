// Node communicators for staging (data/node_groups.hpp).
#include "scaletrain/data/node_groups.hpp"

#include <numeric>

#include "scaletrain/core/check_mpi.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::data {

NodeGroups::NodeGroups(MPI_Comm world, int node_ranks) : world_(world) {
  ST_USER_CHECK(node_ranks >= 0, "data.node_ranks must be >= 0 (0: one node per machine), got ", node_ranks);
  ST_MPI_CHECK(MPI_Comm_rank(world, &world_rank_));
  ST_MPI_CHECK(MPI_Comm_size(world, &world_size_));
  MPI_Comm machine = MPI_COMM_NULL;
  ST_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL, &machine));
  int machine_rank = 0;
  ST_MPI_CHECK(MPI_Comm_rank(machine, &machine_rank));
  const int color = node_ranks > 0 ? machine_rank / node_ranks : 0;
  ST_MPI_CHECK(MPI_Comm_split(machine, color, machine_rank, &node_));
  MPI_Comm_free(&machine);
  ST_MPI_CHECK(MPI_Comm_rank(node_, &local_rank_));
  ST_MPI_CHECK(MPI_Comm_split(world, leader() ? 0 : MPI_UNDEFINED, world_rank_, &leaders_));
  if (leader()) ST_MPI_CHECK(MPI_Comm_rank(leaders_, &node_index_));
  ST_MPI_CHECK(MPI_Bcast(&node_index_, 1, MPI_INT, 0, node_));
  std::vector<int> node_of(static_cast<size_t>(world_size_));
  ST_MPI_CHECK(MPI_Allgather(&node_index_, 1, MPI_INT, node_of.data(), 1, MPI_INT, world));
  int nodes = 0;
  for (int k : node_of) nodes = std::max(nodes, k + 1);
  node_sizes_.assign(static_cast<size_t>(nodes), 0);
  for (int k : node_of) ++node_sizes_[static_cast<size_t>(k)];
}

NodeGroups::~NodeGroups() {
  if (leaders_ != MPI_COMM_NULL) MPI_Comm_free(&leaders_);
  if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
}

int NodeGroups::first_slot(int node) const {
  return std::accumulate(node_sizes_.begin(), node_sizes_.begin() + node, 0);
}

}  // namespace scaletrain::data
