// Softmax cross-entropy loss through the kernels/ functors.
#include "scaletrain/nn/softmax_cross_entropy.hpp"

#include <algorithm>

#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/kernels/softmax_cross_entropy.hpp"

namespace scaletrain::nn {

void SoftmaxCrossEntropy::build(int64_t batch, int64_t classes) {
  ST_CHECK(batch > 0 && classes > 1, "loss needs batch > 0 and at least 2 classes, got batch ", batch, ", classes ",
           classes);
  batch_ = batch;
  classes_ = classes;
  probs_ = Tensor({batch, classes});
  dlogits_ = Tensor({batch, classes});
  loss_ = Tensor({batch});
  correct_ = Tensor({batch}, DType::i32);
}

LossResult SoftmaxCrossEntropy::forward(const Tensor& logits, const Tensor& labels, int64_t counted_rows) {
  ST_CHECK(logits.numel() == batch_ * classes_, "logits have shape ", shape_string(logits.shape()), ", expected [",
           batch_, ", ", classes_, "]");
  ST_CHECK(labels.numel() == batch_, "labels have ", labels.numel(), " entries for a batch of ", batch_);
  const int32_t* lab = labels.data<int32_t>();
  for (int64_t i = 0; i < batch_; ++i)
    ST_CHECK(lab[i] >= 0 && lab[i] < classes_, "label ", lab[i], " in row ", i, " is outside [0, ", classes_, ")");
  labels_ref_ = labels;
  kernels::launch_host("softmax_xent_forward", batch_,
                       kernels::SoftmaxCrossEntropyForward{logits.data<float>(), lab, probs_.data<float>(),
                                                           loss_.data<float>(), correct_.data<int32_t>(), classes_});
  LossResult r;
  r.count = counted_rows < 0 ? batch_ : std::min(counted_rows, batch_);
  const float* l = loss_.data<float>();
  const int32_t* c = correct_.data<int32_t>();
  for (int64_t i = 0; i < r.count; ++i) {
    r.loss_sum += l[i];
    r.correct += c[i];
  }
  return r;
}

const Tensor& SoftmaxCrossEntropy::backward(float scale) {
  kernels::launch_host("softmax_xent_backward", batch_ * classes_,
                       kernels::SoftmaxCrossEntropyBackward{probs_.data<float>(), labels_ref_.data<int32_t>(),
                                                            dlogits_.data<float>(), classes_, scale});
  return dlogits_;
}

}  // namespace scaletrain::nn
