// The model's PyTorch twin: for the chains of the zoo, the nn.Sequential of perf/pytorch_anchor.py,
// one module per operation; for graph models, a module whose submodules carry the nodes' names.
// Checkpoints store parameters (and optimizer state) under the twin's state_dict names and in its
// layouts, so that torch's load_state_dict(strict=True) takes them as they are. Our layouts already
// are PyTorch's, except for the first Dense layer after a Flatten of [H, W, C] images: our columns
// run in HWC order, PyTorch's nn.Flatten of NCHW in CHW order, so those columns are permuted.
#pragma once
#include <string>
#include <vector>

#include "scaletrain/nn/model.hpp"

namespace scaletrain::nn {

struct TorchParameter {
  std::string name;  // "3.weight", "layer1.0.conv1.weight": the slot's name
  Shape shape;       // PyTorch layout (the same as ours)
  size_t slot = 0;   // index into Model::slots()
  // Columns of a [units, H*W*C] Dense weight to reorder from HWC to CHW (hwc empty: none).
  Shape hwc;
};

// The twin's parameters in the order of Model::layers() (a chain's: the order of torch's state_dict).
std::vector<TorchParameter> torch_parameters(const Model& model);

// `ours` (the slot's values, our layout) into `torch` (the twin's layout), and back. Both hold
// product(shape) floats.
void to_torch_layout(const TorchParameter& p, const float* ours, float* torch);
void from_torch_layout(const TorchParameter& p, const float* torch, float* ours);

}  // namespace scaletrain::nn
