// The model graph's structure, apart from its layers: nodes named by what they produce, each
// consuming the model input or other nodes' outputs by name, in any declaration order. order_graph
// checks the declaration (every name defined once, every consumed name defined, no cycle, every
// output used) and returns the one execution order: topological, ties broken by declaration order
// (the node id), so that it is the same on every rank, the model's output last. A chain declared in
// order keeps its order.
#pragma once
#include <string>
#include <vector>

namespace scaletrain::nn {

struct GraphNodeSpec {
  std::string name;                 // the node's (and its output's) name
  std::vector<std::string> inputs;  // consumed names: other nodes or the model input
};

// Producer of a node's input: a node position in the execution order, or the model input.
inline constexpr int kModelInput = -1;

struct GraphOrder {
  std::vector<size_t> order;                  // order[i]: the id (declaration index) of the i-th node to run
  std::vector<std::vector<int>> producers;    // per position: the position producing each input, or kModelInput
  std::vector<std::vector<size_t>> consumers;  // per position: positions consuming its output, ascending
};

// Throws Error naming the model and the nodes at fault. `input` is the model input's name;
// outputs.front() the node whose output is the model's, the others auxiliary outputs (every other
// node's output must be consumed).
GraphOrder order_graph(const std::string& model, const std::vector<GraphNodeSpec>& nodes, const std::string& input,
                       const std::vector<std::string>& outputs);

}  // namespace scaletrain::nn
