// A linear map's three products as matmul shapes (nn/linear_products.hpp).
#include "scaletrain/nn/linear_products.hpp"

namespace scaletrain::nn {

void LinearProducts::build(Backend& backend, int64_t rows, int64_t in, int64_t out, bool bias, DType dtype) {
  MatmulShape fwd;  // y[rows, out] = x[rows, in] W^T (+ b)
  fwd.m = rows;
  fwd.n = out;
  fwd.k = in;
  fwd.trans_b = true;
  fwd.bias = bias;
  fwd.dtype = fwd.out_dtype = dtype;
  forward_ = backend.make_matmul(fwd);

  MatmulShape weights;  // dW[out, in] = dy^T [out, rows] x[rows, in], f32; db = the sums over rows
  weights.m = out;
  weights.n = in;
  weights.k = rows;
  weights.trans_a = true;
  weights.epilogue = bias ? MatmulEpilogue::bias_gradient : MatmulEpilogue::none;
  weights.dtype = dtype;
  weights.out_dtype = DType::f32;
  grad_weights_ = backend.make_matmul(weights);

  MatmulShape data;  // dx[rows, in] = dy[rows, out] W[out, in]
  data.m = rows;
  data.n = in;
  data.k = out;
  data.dtype = data.out_dtype = dtype;
  grad_data_ = backend.make_matmul(data);
}

}  // namespace scaletrain::nn
