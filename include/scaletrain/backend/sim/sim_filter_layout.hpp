// The simulated device's convolutions compute in OHWI filters, as cuDNN's do on the CUDA backend
// (backend/cuda/cudnn_conv.cpp), so that the model's per-update OHWI copy of the filters (a layer's
// take_filters_in, nn::Model's laid-out parameters) runs and is counted on sim as it would on a GPU.
// Handed OHWI filters, the op turns them back into OIHW for the host operator inside its own device
// call (a permutation: the host operator computes exactly what it would from the OIHW parameters).
#pragma once
#include <memory>

#include "scaletrain/backend/ops.hpp"

namespace scaletrain::sim {

std::unique_ptr<ActivatedConvOp> with_ohwi_filters(std::unique_ptr<ActivatedConvOp> host_op, const ConvShape& shape);

}  // namespace scaletrain::sim
