// The model zoo, built for a per-sample input shape [H, W, C]: the chains mlp, lenet, lenet_dropout and
// fmnist_sepcnn, the test graphs resmlp (residual MLP) and branchnet (Concat and residual Add), and the
// ResNets with BatchNorm: resnet20 (He et al.'s CIFAR network, option-A shortcuts, akamaster's names) and
// resnet18 and resnet50 (torchvision's, parameters and buffers named as its state_dict keys).
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
