// PLACEHOLDER (being written): cublaslt_inner_product.
#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::cuda {

std::unique_ptr<InnerProductOp> make_cublaslt_inner_product(CudaOpContext&, const InnerProductShape&, cudaStream_t) { ST_FAIL("cublaslt_inner_product: not built yet"); }

}  // namespace scaletrain::cuda
