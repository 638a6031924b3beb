// LaidOutParameters: the compute-type copies of the parameters that a layer's op reads in a layout of
// its own (a convolution's filters in OHWI where its op computes in them: cuDNN's NHWC kernels, and
// sim's), in one flat buffer. One launch over a device table of those tensors
// (kernels::MasterFiltersToOhwi) writes them from the f32 master weights after every change of the
// weights (each update, an initialization or a load), in place of a reorder in every op call (two per
// convolution per step: forward and backward-data). The parameters, their gradients and checkpoints
// stay in PyTorch's layout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

class LaidOutParameters {
 public:
  struct Filter {
    Parameter* parameter;  // its op_layout is OHWI; its op_value becomes a view of the copy
    int64_t source;        // where its f32 master weights start in the flat parameters
  };
  // Allocates the copies (compute type) of `filters` and binds each parameter's op_value to its own,
  // with the device table. Nothing where `filters` is empty.
  void build(Backend& backend, const std::vector<Filter>& filters, DType compute, const std::string& model);
  // Queues the launch writing every copy from `flat_params` (f32 master weights) on the compute stream.
  void refresh(const Tensor& flat_params);
  bool empty() const { return count_ == 0; }
  int64_t elements() const { return flat_.defined() ? flat_.numel() : 0; }

 private:
  Backend* backend_ = nullptr;
  Tensor flat_;          // the copies, back to back, in the compute type
  Tensor ends_, table_;  // device i64: where each copy ends; [count, kLaidOutFilterFields]
  int64_t count_ = 0;
};

}  // namespace scaletrain::nn
