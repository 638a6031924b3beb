// The model zoo as a table: one entry per network (its name, what it is, the input it is defined for,
// how its parameters are named, its builder in nn/zoo_networks.hpp), which the configuration's help,
// --summary and the error for an unknown name read. make_zoo_model builds and configures one for a
// per-sample input [H, W, C] (the stem takes C) and a class count (the classifier's outputs).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/nn/model.hpp"
#include "scaletrain/nn/zoo_networks.hpp"

namespace scaletrain::nn {

// The ZooOptions a network takes (ZooEntry::takes, a bitwise or).
enum ZooOption : unsigned { kNoOptions = 0, kClassifierWidth = 1, kDropout = 2, kStemStride = 4, kVitArchitecture = 8 };

struct ZooEntry {
  const char* name;
  const char* about;  // one line: what the network is, whose definition and names it follows
  Shape defined_for;  // the input it is defined for, [H, W, C]
  ParameterNaming naming;
  unsigned takes;  // ZooOption bits
  void (*build)(Model&, const ZooOptions&);
  bool takes_option(ZooOption o) const { return (takes & o) != 0; }
};

// The table, in the order --help lists it.
const std::vector<ZooEntry>& zoo_entries();
std::vector<std::string> zoo_model_names();
// The entry named `name`; an unknown name is a UserError listing the zoo.
const ZooEntry& zoo_entry(const std::string& name);
// "name: about (defined for HxWxC)", one line per network.
std::string zoo_description();

// Builds and configures the named model; errors name what is wrong (an unknown name, too few classes,
// a classifier width, dropout or stem stride for a network without one).
std::unique_ptr<Model> make_zoo_model(const std::string& name, const Shape& input_sample, const ZooOptions& options);
std::unique_ptr<Model> make_zoo_model(const std::string& name, const Shape& input_sample, int64_t num_classes);

}  // namespace scaletrain::nn
