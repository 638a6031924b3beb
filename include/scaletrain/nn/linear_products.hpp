// The three products of a linear map over rows, y[rows, out] = x[rows, in] W^T (+ b) with W [out, in]
// as torch.nn.Linear's: the forward, dx = dy W, and dW = dy^T x with db = dy's column sums (the bias
// gradient epilogue), each a MatmulOp of the backend (which runs these forms on its inner-product
// kernels: backend/inner_product_matmul.hpp). Dense and attention's projections use it.
#pragma once
#include <memory>
#include <string>

#include "scaletrain/backend/backend.hpp"

namespace scaletrain::nn {

class LinearProducts {
 public:
  void build(Backend& backend, int64_t rows, int64_t in, int64_t out, bool bias, DType dtype);
  void forward(const void* x, const void* w, const float* b, void* y) { forward_->run(x, w, b, y, nullptr); }
  // dW (f32 [out, in]) and, with a bias, db (f32 [out]).
  void backward_weights(const void* x, const void* dy, float* dw, float* db) {
    grad_weights_->run(dy, x, nullptr, dw, db);
  }
  void backward_data(const void* dy, const void* w, void* dx) { grad_data_->run(dy, w, nullptr, dx, nullptr); }
  bool built() const { return forward_ != nullptr; }
  std::string implementation() const { return forward_ ? forward_->implementation() : std::string(); }

 private:
  std::unique_ptr<MatmulOp> forward_, grad_weights_, grad_data_;
};

}  // namespace scaletrain::nn
