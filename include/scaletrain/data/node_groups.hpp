// The ranks that stage data together: the ranks sharing one machine's memory
// (MPI_Comm_split_type SHARED), optionally cut into virtual nodes of data.node_ranks ranks each so
// that the exchange between nodes runs (and is tested) on one machine; one leader per node
// (its lowest rank) and the leaders' communicator. Nodes are numbered in the order of their
// leaders' world ranks. A rank's slot is its node's first slot plus its rank in the node, so the
// slots of a node are consecutive: staging cuts a split into per-slot parts (data/split_parts.hpp).
#pragma once
#include <mpi.h>

#include <vector>

namespace scaletrain::data {

class NodeGroups {
 public:
  // Collective over `world`. node_ranks = 0: one node per machine.
  NodeGroups(MPI_Comm world, int node_ranks);
  ~NodeGroups();
  NodeGroups(const NodeGroups&) = delete;
  NodeGroups& operator=(const NodeGroups&) = delete;

  MPI_Comm world() const { return world_; }
  MPI_Comm node() const { return node_; }
  MPI_Comm leaders() const { return leaders_; }  // MPI_COMM_NULL on ranks that do not lead a node
  bool leader() const { return local_rank_ == 0; }
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int node_index() const { return node_index_; }
  int nodes() const { return static_cast<int>(node_sizes_.size()); }
  int local_rank() const { return local_rank_; }
  int local_size() const { return node_sizes_[static_cast<size_t>(node_index_)]; }
  int node_size(int node) const { return node_sizes_[static_cast<size_t>(node)]; }
  int first_slot(int node) const;  // the slots of node k are [first_slot(k), first_slot(k) + node_size(k))
  int slot() const { return first_slot(node_index_) + local_rank_; }

 private:
  MPI_Comm world_;
  MPI_Comm node_ = MPI_COMM_NULL, leaders_ = MPI_COMM_NULL;
  int world_rank_ = 0, world_size_ = 1, node_index_ = 0, local_rank_ = 0;
  std::vector<int> node_sizes_;
};

}  // namespace scaletrain::data
