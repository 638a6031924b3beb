// The matmul family's products that are a dense layer's (y = x w^T + b, dx = dy w, dw = dy^T x with
// db), lowered to the backend's inner-product op: layers ask for matmuls only, and these three run on
// the kernels each backend chose for inner products by measurement (cpu: sgemm in f32, bf16 by
// run.cpu_bf16_gemm; cuda: cuBLASLt with timed algorithms, a bf16 bias staged in the storage type and
// the BGRADB bias gradient). Backend::make_matmul lowers every shape inner_product_form recognizes.
#pragma once
#include <memory>
#include <mutex>
#include <optional>

#include "scaletrain/backend/ops.hpp"

namespace scaletrain {

enum class InnerProductDirection { forward, backward_data, backward_weights };

struct InnerProductForm {
  InnerProductShape shape;
  InnerProductDirection direction = InnerProductDirection::forward;
};

// The inner-product direction `s` computes, if it is one: one contiguous matrix (batch 1, leading
// dimensions their rows' lengths), alpha 1, and
//   forward           C[rows, out] = A[rows, in] B^T (B = w [out, in]) (+ bias), C in the operands' type
//   backward_data     C[rows, in] = A[rows, out] B[out, in], no bias, C in the operands' type
//   backward_weights  C[out, in] = A^T B (A = dy [rows, out], B = x [rows, in]), C f32, the bias
//                     gradient epilogue or none
// Else nullopt (attention's strided batches, a gelu epilogue, alpha != 1, padded rows).
std::optional<InnerProductForm> inner_product_form(const MatmulShape& s);

// The MatmulOp of `s` (inner_product_form(s) == form) running `op`'s direction; its implementation
// name is the inner-product op's. A layer's three products share one op (Backend::make_matmul).
std::unique_ptr<MatmulOp> make_inner_product_matmul(std::shared_ptr<InnerProductOp> op, const InnerProductForm& form);

// The inner-product op a layer's lowered products share: a forward makes one, and the backward
// products made after it on the same stream take it where its sizes are theirs (backward_weights:
// its bias too). So a dense layer's op is made, planned, timed and recorded (run.cpu_bf16_gemm's
// shape counts) once, and two layers of one shape still have an op each, as before the lowering.
class SharedInnerProducts {
 public:
  template <class Make>
  std::shared_ptr<InnerProductOp> get(const InnerProductForm& form, const void* stream, const Make& make) {
    std::lock_guard lock(mutex_);
    if (auto op = last_.lock();
        op && form.direction != InnerProductDirection::forward && stream == stream_ && shares(form))
      return op;
    std::shared_ptr<InnerProductOp> op = make(form.shape);
    last_ = op;
    shape_ = form.shape;
    stream_ = stream;
    return op;
  }

 private:
  bool shares(const InnerProductForm& form) const;
  std::mutex mutex_;
  std::weak_ptr<InnerProductOp> last_;
  InnerProductShape shape_;
  const void* stream_ = nullptr;
};

}  // namespace scaletrain
