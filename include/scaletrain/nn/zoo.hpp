// The model zoo, built for a per-sample input shape [H, W, C]: the chains mlp, lenet, lenet_dropout and
// fmnist_sepcnn, and the test graphs resmlp (residual MLP) and branchnet (Concat and residual Add).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/nn/model.hpp"

namespace scaletrain::nn {

std::vector<std::string> zoo_model_names();
// Builds and configures the named model; an unknown name is an Error listing the valid names.
std::unique_ptr<Model> make_zoo_model(const std::string& name, const Shape& input_sample, int64_t num_classes);

}  // namespace scaletrain::nn
