// Checking a model graph's declaration and ordering its nodes (nn/graph.hpp): Kahn's algorithm
// taking the lowest ready node id first (the model's output last).
#include "scaletrain/nn/graph.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/join.hpp"

namespace scaletrain::nn {
namespace {

// Declaration index of each node by name; a name used twice (or the input's name) is an error.
std::map<std::string, size_t> index_names(const std::string& model, const std::vector<GraphNodeSpec>& nodes,
                                          const std::string& input) {
  std::map<std::string, size_t> id;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string& n = nodes[i].name;
    ST_USER_CHECK(n != input, "model '", model, "': node ", i, " is named '", n, "', the name of the model input");
    const auto [it, fresh] = id.emplace(n, i);
    ST_USER_CHECK(fresh, "model '", model, "': the name '", n, "' is used twice (nodes ", it->second, " and ", i, ")");
  }
  return id;
}

// The nodes on one cycle among those Kahn's algorithm could not order, as "a -> b -> a".
std::string describe_cycle(const std::vector<GraphNodeSpec>& nodes, const std::map<std::string, size_t>& id,
                           const std::vector<int>& pending) {
  size_t at = 0;
  while (pending[at] == 0) ++at;
  std::vector<size_t> path;
  std::set<size_t> seen;
  while (seen.insert(at).second) {  // walk backwards along unordered inputs until a node repeats
    path.push_back(at);
    for (const auto& in : nodes[at].inputs) {
      const auto it = id.find(in);
      if (it != id.end() && pending[it->second] > 0) {
        at = it->second;
        break;
      }
    }
  }
  std::vector<std::string> names;
  for (size_t i = path.size(); i-- > 0;) {
    names.push_back(nodes[path[i]].name);
    if (path[i] == at) break;
  }
  names.push_back(names.front());  // names runs along the data flow: each feeds the next
  return join(names, " -> ");
}

}  // namespace

GraphOrder order_graph(const std::string& model, const std::vector<GraphNodeSpec>& nodes, const std::string& input,
                       const std::vector<std::string>& outputs) {
  ST_USER_CHECK(!nodes.empty(), "model '", model, "' has no layers");
  ST_CHECK(!outputs.empty(), "model '", model, "': order_graph needs the model's output");
  const auto id = index_names(model, nodes, input);
  for (const std::string& out : outputs)
    ST_USER_CHECK(id.count(out), "model '", model, "': the output '", out, "' is not a node");
  const std::string& output = outputs.front();
  const size_t output_id = id.at(output);
  const auto is_output = [&](const std::string& name) {
    return std::find(outputs.begin(), outputs.end(), name) != outputs.end();
  };
  // pending[i]: inputs of node i produced by nodes not yet ordered.
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  bool input_used = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    ST_USER_CHECK(!nodes[i].inputs.empty(), "model '", model, "': node '", nodes[i].name, "' has no input");
    for (const auto& in : nodes[i].inputs) {
      if (in == input) {
        input_used = true;
        continue;
      }
      const auto it = id.find(in);
      ST_USER_CHECK(it != id.end(), "model '", model, "': node '", nodes[i].name, "' consumes '", in,
                    "', which no node defines");
      ++pending[i];
      users[it->second].push_back(i);
    }
  }
  ST_USER_CHECK(input_used, "model '", model, "': no node consumes the model input '", input, "'");
  for (size_t i = 0; i < nodes.size(); ++i)
    ST_USER_CHECK(!users[i].empty() || is_output(nodes[i].name), "model '", model, "': the output of node '",
                  nodes[i].name, "' is used by no node and is not the model's output ('", output,
                  "') or an auxiliary one");

  GraphOrder g;
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  while (!ready.empty()) {
    // The model's output waits until nothing else is ready: it runs last.
    auto next = ready.begin();
    if (*next == output_id && ready.size() > 1) ++next;
    const size_t n = *next;
    ready.erase(next);
    g.order.push_back(n);
    for (size_t u : users[n])
      if (--pending[u] == 0) ready.insert(u);
  }
  ST_USER_CHECK(g.order.size() == nodes.size(), "model '", model, "' has a cycle: ", describe_cycle(nodes, id, pending));

  std::vector<size_t> position(nodes.size());
  for (size_t p = 0; p < g.order.size(); ++p) position[g.order[p]] = p;
  g.producers.resize(nodes.size());
  g.consumers.resize(nodes.size());
  for (size_t p = 0; p < g.order.size(); ++p) {
    for (const auto& in : nodes[g.order[p]].inputs) {
      if (in == input) {
        g.producers[p].push_back(kModelInput);
        continue;
      }
      const size_t q = position[id.at(in)];
      g.producers[p].push_back(static_cast<int>(q));
      if (g.consumers[q].empty() || g.consumers[q].back() != p) g.consumers[q].push_back(p);
    }
  }
  return g;
}

}  // namespace scaletrain::nn
