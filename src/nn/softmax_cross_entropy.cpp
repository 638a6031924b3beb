// Softmax cross-entropy loss through the kernels/ functors, with device-side loss/accuracy sums (the
// reduction primitive's column sums of [loss, correct, 1]).
#include "scaletrain/nn/softmax_cross_entropy.hpp"

#include <algorithm>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/kernels/softmax_cross_entropy.hpp"

namespace scaletrain::nn {

void SoftmaxCrossEntropy::build(Backend& backend, int64_t batch, int64_t classes) {
  ST_CHECK(batch > 0 && classes > 1, "loss needs batch > 0 and at least 2 classes, got batch ", batch, ", classes ",
           classes);
  backend_ = &backend;
  batch_ = batch;
  classes_ = classes;
  probs_ = backend.empty({batch, classes}, DType::f32, "loss.probs");
  dlogits_ = backend.empty({batch, classes}, DType::f32, "loss.dlogits");
  loss_ = backend.empty({batch}, DType::f32, "loss.rows");
  correct_ = backend.empty({batch}, DType::i32, "loss.correct");
  scratch_sums_ = backend.empty({kLossSumsSize}, DType::f64, "loss.sums");
  // A plan over fewer rows has no more row blocks: this holds the partial sums of every accumulate.
  const int64_t partial = kernels::plan_column_sums(batch, 1, 3, backend.multiprocessor_count()).partial_size();
  sums_partial_ = backend.empty({std::max<int64_t>(1, partial)}, DType::f64, "loss.partial_sums");
}

void SoftmaxCrossEntropy::forward(const Tensor& logits, const Tensor& labels) {
  ST_CHECK(logits.numel() == batch_ * classes_, "logits have shape ", shape_string(logits.shape()), ", expected [",
           batch_, ", ", classes_, "]");
  ST_CHECK(labels.numel() == batch_, "labels have ", labels.numel(), " entries for a batch of ", batch_);
  if (labels.on_host()) {
    const int32_t* lab = labels.data<int32_t>();
    for (int64_t i = 0; i < batch_; ++i)
      ST_CHECK(lab[i] >= 0 && lab[i] < classes_, "label ", lab[i], " in row ", i, " is outside [0, ", classes_, ")");
  }
  labels_ref_ = labels;
  launch_row_reductions(backend_->compute_stream(), "softmax_xent_forward", kernels::plan_rows(batch_, classes_),
         kernels::SoftmaxCrossEntropyForward{logits.device_data<float>(), labels.device_data<int32_t>(),
                                             probs_.device_data<float>(), loss_.device_data<float>(),
                                             correct_.device_data<int32_t>(), classes_});
}

template <class Sink>
void SoftmaxCrossEntropy::accumulate_into(const Tensor& sums, int64_t rows, const Sink& sink) {
  ST_CHECK(sums.numel() == kLossSumsSize && sums.dtype() == DType::f64, "loss sums '", sums.name(),
           "' must be f64 [", kLossSumsSize, "]");
  if (rows == 0) return;
  const kernels::ColumnSumsPlan plan = kernels::plan_column_sums(rows, 1, 3, backend_->multiprocessor_count());
  launch_column_sums(backend_->compute_stream(), "loss_sums", plan,
                     kernels::LossTerms{loss_.device_data<float>(), correct_.device_data<int32_t>()},
                     sums_partial_.device_data<double>(), sink);
}

void SoftmaxCrossEntropy::accumulate(const Tensor& sums, int64_t counted_rows) {
  const int64_t rows = counted_rows < 0 ? batch_ : std::min(counted_rows, batch_);
  accumulate_into(sums, rows, kernels::AddDouble{sums.device_data<double>()});
}

void SoftmaxCrossEntropy::accumulate_unless(const Tensor& sums, const double* unless) {
  accumulate_into(sums, batch_, kernels::AddDoubleUnless{sums.device_data<double>(), unless});
}

const Tensor& SoftmaxCrossEntropy::backward(float scale) { return backward(scale, nullptr, 1.0f); }

const Tensor& SoftmaxCrossEntropy::backward(float scale, const double* loss_scale, float divisor) {
  launch(backend_->compute_stream(), "softmax_xent_backward", batch_ * classes_,
         kernels::SoftmaxCrossEntropyBackward{probs_.device_data<float>(), labels_ref_.device_data<int32_t>(),
                                              dlogits_.device_data<float>(), classes_, scale, loss_scale, divisor});
  return dlogits_;
}

LossResult SoftmaxCrossEntropy::forward_and_read(const Tensor& logits, const Tensor& labels, int64_t counted_rows) {
  forward(logits, labels);
  backend_->fill_zero_async(backend_->compute_stream(), scratch_sums_);
  accumulate(scratch_sums_, counted_rows);
  return read_sums(*backend_, scratch_sums_);
}

LossResult SoftmaxCrossEntropy::read_sums(Backend& backend, const Tensor& sums) {
  const Tensor host = backend.download(sums);
  const double* s = host.data<double>();
  LossResult r;
  r.loss_sum = s[0];
  r.correct = static_cast<int64_t>(s[1]);
  r.count = static_cast<int64_t>(s[2]);
  return r;
}

}  // namespace scaletrain::nn
