// PLACEHOLDER (being written): cudnn_pool.
#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cuda {

std::unique_ptr<PoolOp> make_cudnn_pool(CudaOpContext&, const PoolShape&, cudaStream_t) { ST_FAIL("cudnn_pool: not built yet"); }

}  // namespace scaletrain::cuda
