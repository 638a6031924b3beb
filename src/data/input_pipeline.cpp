// InputPipeline: augmentation, normalization and cast of a device batch (data/input_pipeline.hpp).
#include "scaletrain/data/input_pipeline.hpp"

#include <cmath>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/normalize.hpp"

namespace scaletrain::data {
namespace {

// Calls f(S{}) with S the C++ type of a stored sample type.
template <class F>
void visit_stored_type(DType t, F&& f) {
  switch (t) {
    case DType::u8: f(uint8_t{}); return;
    case DType::f16: f(f16{}); return;
    case DType::f32: f(float{}); return;
    default: ST_FAIL("input samples of type ", dtype_name(t), " are not read: uint8, f16 or f32 only");
  }
}

std::string statistics_problem(const InputOptions& o) {
  if (o.mean.empty() && o.std.empty()) return "";
  const auto channels = static_cast<size_t>(o.sample_shape.back());
  if (o.mean.size() != channels || o.std.size() != channels)
    return "data set " + o.source + " stores " + std::to_string(o.mean.size()) + " means and " +
           std::to_string(o.std.size()) + " standard deviations for samples of " + std::to_string(channels) +
           " channels (shape " + shape_string(o.sample_shape) + "): recompute them with `st-info --add-stats " +
           o.source + "`";
  for (size_t c = 0; c < channels; ++c)
    if (!std::isfinite(o.mean[c]) || !std::isfinite(o.std[c]) || o.std[c] < 0)
      return "data set " + o.source + " stores mean " + std::to_string(o.mean[c]) + " and std " +
             std::to_string(o.std[c]) + " for channel " + std::to_string(c) +
             ": the training split holds non-finite values, or the statistics were damaged; repack it, or "
             "recompute them with `st-info --add-stats " + o.source + "`";
  return "";
}

}  // namespace

std::string input_options_problem(const InputOptions& o) {
  if (o.stored != DType::u8 && o.stored != DType::f16 && o.stored != DType::f32)
    return "data set " + o.source + " stores " + std::string(dtype_name(o.stored)) +
           " samples; the trainer reads uint8, f16 and f32";
  if (o.sample_shape.empty()) return "data set " + o.source + " has an empty sample shape";
  if (o.augment && o.sample_shape.size() != 3)
    return "data.augment crops and flips [H, W, C] images, but the samples of " + o.source + " are " +
           shape_string(o.sample_shape) + ": set data.augment = false";
  return statistics_problem(o);
}

InputPipeline::InputPipeline(Backend& backend, InputOptions options) : backend_(backend), o_(std::move(options)) {
  if (const std::string problem = input_options_problem(o_); !problem.empty()) ST_USER_FAIL(problem);
  ST_CHECK(o_.batch > 0, "input pipeline for ", o_.batch, " rows");
  Shape batch_shape{o_.batch};
  batch_shape.insert(batch_shape.end(), o_.sample_shape.begin(), o_.sample_shape.end());
  input_ = backend_.empty(batch_shape, o_.compute, "input");
  if (o_.augment) augmented_ = backend_.empty(batch_shape, o_.stored, "input.augmented");
  own_batch_ = !host_accessible(backend_.device());
  if (own_batch_) {
    samples_ = backend_.empty(batch_shape, o_.stored, "input.samples");
    labels_ = backend_.empty({o_.batch}, DType::i32, "input.labels");
    indices_ = backend_.empty({o_.batch}, DType::i64, "input.indices");
  }
  // Without statistics: mean 0 and std 1, the raw values. A zero std (a constant channel) divides by 1.
  const auto c = static_cast<size_t>(channels());
  for (size_t k = 0; k < c; ++k) {
    const float sd = o_.std.empty() ? 1.0f : o_.std[k];
    host_mean_.push_back(o_.mean.empty() ? 0.0f : o_.mean[k]);
    host_inv_std_.push_back(sd > 0 ? 1.0f / sd : 1.0f);
  }
  mean_ = backend_.empty({channels()}, DType::f32, "input.mean");
  inv_std_ = backend_.empty({channels()}, DType::f32, "input.inv_std");
  backend_.upload(mean_, host_mean_);
  backend_.upload(inv_std_, host_inv_std_);
}

const Tensor& InputPipeline::prepare(const Batch& batch, const double* step, bool training) {
  ST_CHECK(batch.device_samples.dtype() == o_.stored, "a batch of ", dtype_name(batch.device_samples.dtype()),
           " samples reached the input pipeline of ", dtype_name(o_.stored), " samples of ", o_.source);
  backend_.compute_stream().wait(*batch.copied);  // the batch's host-to-device copy
  take(batch);
  if (training && o_.augment) {
    augment(step);
    normalize(augmented_);
  } else {
    normalize(samples_);
  }
  return input_;
}

// The batch as the step reads it: copied into the pipeline's own buffers on a device apart from the
// host (three device-to-device copies in stream order, after the previous step's reads), else the
// loader's slot itself.
void InputPipeline::take(const Batch& batch) {
  ST_CHECK(batch.device_labels.numel() == o_.batch && batch.device_indices.numel() == o_.batch,
           "a batch without its device labels and indices reached the input pipeline of ", o_.source);
  if (!own_batch_) {
    samples_ = batch.device_samples;
    labels_ = batch.device_labels;
    indices_ = batch.device_indices;
    return;
  }
  Stream& s = backend_.compute_stream();
  backend_.copy_async(s, samples_, batch.device_samples);
  backend_.copy_async(s, labels_, batch.device_labels);
  backend_.copy_async(s, indices_, batch.device_indices);
}

// The crop and flip of each sample, drawn from (seed, step, sample index): alike on any rank count.
void InputPipeline::augment(const double* step) {
  ST_CHECK(step != nullptr, "data.augment of ", o_.source, ": a training batch needs the step number on the device");
  visit_stored_type(o_.stored, [&](auto tag) {
    using S = decltype(tag);
    launch(backend_.compute_stream(), "augment_crop_flip", o_.batch,
           kernels::AugmentCropFlip<S>{samples_.device_data<S>(), augmented_.device_data<S>(), o_.sample_shape[0],
                                       o_.sample_shape[1], o_.sample_shape[2], o_.augment_pad, o_.augment_flip,
                                       o_.seed, step, indices_.device_data<int64_t>()});
  });
}

void InputPipeline::normalize(const Tensor& samples) {
  Stream& s = backend_.compute_stream();
  visit_stored_type(o_.stored, [&](auto stored_tag) {
    using S = decltype(stored_tag);
    const S* x = samples.device_data<S>();
    visit_float_type(input_.dtype(), [&](auto compute_tag) {
      using T = decltype(compute_tag);
      if (channels() == 1) {
        launch(s, "normalize", input_.numel(),
               kernels::NormalizeOneChannel<S, T>{x, input_.device_data<T>(), host_mean_[0], host_inv_std_[0]});
        return;
      }
      launch(s, "normalize", input_.numel() / channels(),
             kernels::Normalize<S, T>{x, input_.device_data<T>(), mean_.device_data<float>(),
                                      inv_std_.device_data<float>(), channels()});
    });
  });
}

}  // namespace scaletrain::data
