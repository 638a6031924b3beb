// PLACEHOLDER (being written): cudnn_conv.
#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cuda {

std::unique_ptr<ConvOp> make_cudnn_conv(CudaOpContext&, const ConvShape&, cudaStream_t) { ST_FAIL("cudnn_conv: not built yet"); }

}  // namespace scaletrain::cuda
