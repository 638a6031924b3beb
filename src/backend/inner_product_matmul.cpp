// Dense-layer products of the matmul family on the inner-product op (backend/inner_product_matmul.hpp).
#include "scaletrain/backend/inner_product_matmul.hpp"

#include "scaletrain/core/error.hpp"

namespace scaletrain {
namespace {

class InnerProductMatmul final : public MatmulOp {
 public:
  InnerProductMatmul(std::shared_ptr<InnerProductOp> op, const InnerProductForm& form)
      : op_(std::move(op)), direction_(form.direction) {
    set_implementation(op_->implementation());
  }
  void run(const void* a, const void* b, const float* bias, void* c, void* aux) override {
    switch (direction_) {
      case InnerProductDirection::forward:
        op_->forward(a, b, bias, c);
        return;
      case InnerProductDirection::backward_data:
        op_->backward_data(a, b, c);
        return;
      case InnerProductDirection::backward_weights:
        op_->backward_weights(b, a, static_cast<float*>(c), static_cast<float*>(aux));
        return;
    }
  }

 private:
  std::shared_ptr<InnerProductOp> op_;
  InnerProductDirection direction_;
};

bool contiguous_matrix(const MatmulShape& s) {
  return s.batch == 1 && s.alpha == 1.0f && s.lda_or() == (s.trans_a ? s.m : s.k) &&
         s.ldb_or() == (s.trans_b ? s.k : s.n) && s.ldc_or() == s.n;
}

}  // namespace

std::optional<InnerProductForm> inner_product_form(const MatmulShape& s) {
  if (!contiguous_matrix(s)) return std::nullopt;
  const bool same_type = s.out_dtype == s.dtype, plain = s.epilogue == MatmulEpilogue::none;
  if (!s.trans_a && s.trans_b && same_type && plain)
    return InnerProductForm{{s.m, s.k, s.n, s.bias, s.dtype}, InnerProductDirection::forward};
  if (!s.trans_a && !s.trans_b && same_type && plain && !s.bias)
    return InnerProductForm{{s.m, s.n, s.k, false, s.dtype}, InnerProductDirection::backward_data};
  const bool bias_gradient = s.epilogue == MatmulEpilogue::bias_gradient;
  if (s.trans_a && !s.trans_b && s.out_dtype == DType::f32 && !s.bias && (plain || bias_gradient))
    return InnerProductForm{{s.k, s.n, s.m, bias_gradient, s.dtype}, InnerProductDirection::backward_weights};
  return std::nullopt;
}

std::unique_ptr<MatmulOp> make_inner_product_matmul(std::shared_ptr<InnerProductOp> op, const InnerProductForm& form) {
  ST_CHECK(op != nullptr, "make_inner_product_matmul needs an inner-product op");
  return std::make_unique<InnerProductMatmul>(std::move(op), form);
}

bool SharedInnerProducts::shares(const InnerProductForm& form) const {
  const InnerProductShape& s = form.shape;
  const bool sizes = s.batch == shape_.batch && s.in_features == shape_.in_features &&
                     s.out_features == shape_.out_features && s.dtype == shape_.dtype;
  return sizes && (form.direction == InnerProductDirection::backward_data || s.bias == shape_.bias);
}

}  // namespace scaletrain
