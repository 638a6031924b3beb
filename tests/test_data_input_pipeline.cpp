// The input pipeline (data/input_pipeline.hpp) on cpu and sim: every stored type (uint8, f16, f32)
// normalizes per channel as (x - mean) * (1 / std) in every compute type; float samples holding
// uint8's values prepare to bitwise the same input, augmented or not; augmentation runs on training
// batches only; data.normalize = none passes raw values; and the refusals name the file and the fix.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/data/input_pipeline.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using scaletrain::testing::backend_of;

namespace {

constexpr int64_t kRows = 4;
const Shape kImage{6, 5, 3};  // [H, W, C]

// The step number on the device, as the trainer's step state holds it (f64).
void set_device_step(Backend& b, const Tensor& step, double value) {
  Tensor host({1}, DType::f64, "step");
  host.data<double>()[0] = value;
  b.copy_async(b.compute_stream(), step, host);
  b.compute_stream().synchronize();
}

// A device batch of `values` stored as `stored`, as the loader hands it over (copied, with labels and
// indices; `first_index` the first row's), and the step number on the device (3).
struct DeviceBatch {
  data::Batch batch;
  std::unique_ptr<Event> copied;
  Tensor step;
  const double* step_number() const { return step.device_data<double>(); }
  DeviceBatch(Backend& b, const Shape& sample, DType stored, const std::vector<uint8_t>& values,
              int64_t first_index = 100) {
    step = b.empty({1}, DType::f64, "step");
    set_device_step(b, step, 3);
    Shape shape{kRows};
    shape.insert(shape.end(), sample.begin(), sample.end());
    Tensor host(shape, stored, "samples");
    for (size_t i = 0; i < values.size(); ++i) {
      if (stored == DType::u8) host.data<uint8_t>()[i] = values[i];
      else if (stored == DType::f16) host.data<f16>()[i] = float_to_f16(values[i]);
      else host.data<float>()[i] = values[i];
    }
    Tensor indices({kRows}, DType::i64, "indices");
    Tensor labels({kRows}, DType::i32, "labels");
    for (int64_t r = 0; r < kRows; ++r) {
      indices.data<int64_t>()[r] = first_index + 7 * r;
      labels.data<int32_t>()[r] = static_cast<int32_t>((first_index + r) % 10);
    }
    batch.device_samples = b.empty(shape, stored, "device samples");
    batch.device_labels = b.empty({kRows}, DType::i32, "device labels");
    batch.device_indices = b.empty({kRows}, DType::i64, "device indices");
    Stream& s = b.copy_stream();
    b.copy_async(s, batch.device_samples, host);
    b.copy_async(s, batch.device_labels, labels);
    b.copy_async(s, batch.device_indices, indices);
    copied = b.make_event("copied");
    s.record(*copied);
    s.synchronize();
    batch.copied = copied.get();
  }
};

std::vector<uint8_t> pixel_values(int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 53 + 11) % 256);
  return v;
}

data::InputOptions image_options(DType stored, DType compute) {
  data::InputOptions o;
  o.source = "images.h5";
  o.sample_shape = kImage;
  o.stored = stored;
  o.compute = compute;
  o.batch = kRows;
  o.mean = {72.5f, 100.25f, 3.0f};
  o.std = {40.0f, 0.5f, 90.0f};
  o.seed = 9;
  return o;
}

// The prepared input as raw bytes on the host.
std::vector<uint8_t> prepare_bytes(Backend& b, data::InputPipeline& p, const DeviceBatch& d, bool training) {
  const Tensor host = b.download(p.prepare(d.batch, d.step_number(), training));
  const auto* raw = static_cast<const uint8_t*>(host.raw());
  return {raw, raw + host.numel() * static_cast<int64_t>(dtype_size(host.dtype()))};
}

class InputPipelineTest : public ::testing::TestWithParam<DeviceKind> {};

TEST_P(InputPipelineTest, NormalizesEveryStoredTypePerChannel) {
  auto b = backend_of(GetParam());
  const std::vector<uint8_t> values = pixel_values(kRows * shape_numel(kImage));
  for (DType stored : {DType::u8, DType::f16, DType::f32}) {
    data::InputPipeline p(*b, image_options(stored, DType::f32));
    DeviceBatch d(*b, kImage, stored, values);
    const Tensor y = b->download(p.prepare(d.batch, d.step_number(), true));
    ASSERT_EQ(y.shape(), (Shape{kRows, 6, 5, 3}));
    const data::InputOptions& o = p.options();
    for (size_t i = 0; i < values.size(); ++i) {
      const size_t c = i % 3;
      EXPECT_EQ(y.data<float>()[i], (static_cast<float>(values[i]) - o.mean[c]) * (1.0f / o.std[c]))
          << dtype_name(stored) << " value " << i;
    }
  }
}

TEST_P(InputPipelineTest, FloatCopiesOfUint8PrepareBitwiseAlikeInEveryComputeType) {
  auto b = backend_of(GetParam());
  const std::vector<uint8_t> values = pixel_values(kRows * shape_numel(kImage));
  for (DType compute : {DType::f32, DType::bf16, DType::f16})
    for (bool augment : {false, true}) {
      std::vector<std::vector<uint8_t>> prepared;
      for (DType stored : {DType::u8, DType::f16, DType::f32}) {
        data::InputOptions o = image_options(stored, compute);
        o.augment = augment;
        data::InputPipeline p(*b, o);
        DeviceBatch d(*b, kImage, stored, values);
        prepared.push_back(prepare_bytes(*b, p, d, true));
      }
      EXPECT_EQ(prepared[0], prepared[1]) << "f16 samples, compute " << dtype_name(compute) << ", augment " << augment;
      EXPECT_EQ(prepared[0], prepared[2]) << "f32 samples, compute " << dtype_name(compute) << ", augment " << augment;
    }
}

TEST_P(InputPipelineTest, AugmentsTrainingBatchesOnly) {
  auto b = backend_of(GetParam());
  const std::vector<uint8_t> values = pixel_values(kRows * shape_numel(kImage));
  data::InputOptions o = image_options(DType::f32, DType::f32);
  data::InputPipeline plain(*b, o);
  o.augment = true;
  o.augment_pad = 2;
  data::InputPipeline augmenting(*b, o);
  DeviceBatch d(*b, kImage, DType::f32, values);
  const std::vector<uint8_t> reference = prepare_bytes(*b, plain, d, true);
  EXPECT_EQ(prepare_bytes(*b, augmenting, d, false), reference) << "an evaluation batch was augmented";
  EXPECT_NE(prepare_bytes(*b, augmenting, d, true), reference) << "a training batch was not augmented";
}

// On a device apart from the host, the step's kernels read the pipeline's own buffers, whatever slot
// the batch came in: the same addresses every step, holding this batch's values.
TEST_P(InputPipelineTest, TheStepReadsItsBatchAtTheSameAddressesEveryStep) {
  auto b = backend_of(GetParam());
  data::InputOptions o = image_options(DType::u8, DType::f32);
  o.augment = true;
  data::InputPipeline p(*b, o);
  const std::vector<uint8_t> values = pixel_values(kRows * shape_numel(kImage));
  DeviceBatch first(*b, kImage, DType::u8, values, 100), second(*b, kImage, DType::u8, values, 300);
  const void* addresses[2][3];
  int k = 0;
  for (const DeviceBatch* d : {&first, &second}) {
    p.prepare(d->batch, d->step_number(), true);
    const Tensor labels = b->download(p.labels()), indices = b->download(p.indices());
    const Tensor want_labels = b->download(d->batch.device_labels), want_indices = b->download(d->batch.device_indices);
    for (int64_t r = 0; r < kRows; ++r) {
      EXPECT_EQ(labels.data<int32_t>()[r], want_labels.data<int32_t>()[r]) << "row " << r;
      EXPECT_EQ(indices.data<int64_t>()[r], want_indices.data<int64_t>()[r]) << "row " << r;
    }
    addresses[k][0] = p.input().device_raw();
    addresses[k][1] = p.labels().device_raw();
    addresses[k][2] = p.indices().device_raw();
    ++k;
  }
  EXPECT_EQ(addresses[0][0], addresses[1][0]);
  if (GetParam() == DeviceKind::cpu) {  // the device is the host: the slot itself, nothing copied
    EXPECT_EQ(addresses[1][1], second.batch.device_labels.device_raw());
    return;
  }
  EXPECT_EQ(addresses[0][1], addresses[1][1]);
  EXPECT_EQ(addresses[0][2], addresses[1][2]);
  EXPECT_NE(addresses[1][1], second.batch.device_labels.device_raw());
}

// The crop and flip are drawn from the step number the kernel reads on the device: the same launch
// draws anew when the step state moves on, and alike when it returns to the step.
TEST_P(InputPipelineTest, AugmentationReadsTheStepOnTheDevice) {
  auto b = backend_of(GetParam());
  data::InputOptions o = image_options(DType::u8, DType::f32);
  o.augment = true;
  o.augment_pad = 2;
  data::InputPipeline p(*b, o);
  DeviceBatch d(*b, kImage, DType::u8, pixel_values(kRows * shape_numel(kImage)));
  const std::vector<uint8_t> at3 = prepare_bytes(*b, p, d, true);
  set_device_step(*b, d.step, 4);
  EXPECT_NE(prepare_bytes(*b, p, d, true), at3) << "step 4 drew the crops and flips of step 3";
  set_device_step(*b, d.step, 3);
  EXPECT_EQ(prepare_bytes(*b, p, d, true), at3);
}

// 1-D spectra [L] (L channels) and 3-D volumes [D, H, W, C] normalize per last dimension; without
// statistics (data.normalize = none) the raw values pass.
TEST_P(InputPipelineTest, AnySampleShapeAndRawValues) {
  auto b = backend_of(GetParam());
  for (const Shape& sample : {Shape{16}, Shape{3, 4, 2, 2}}) {
    const int64_t c = sample.back();
    const std::vector<uint8_t> values = pixel_values(kRows * shape_numel(sample));
    data::InputOptions o;
    o.source = "fields.h5";
    o.sample_shape = sample;
    o.stored = DType::f32;
    o.batch = kRows;
    for (int64_t k = 0; k < c; ++k) {
      o.mean.push_back(1.5f * static_cast<float>(k));
      o.std.push_back(2.0f + static_cast<float>(k));
    }
    data::InputPipeline normalized(*b, o);
    o.mean.clear();
    o.std.clear();
    data::InputPipeline raw(*b, o);
    DeviceBatch d(*b, sample, DType::f32, values);
    const Tensor y = b->download(normalized.prepare(d.batch, d.step_number(), true));
    const Tensor r = b->download(raw.prepare(d.batch, d.step_number(), true));
    for (size_t i = 0; i < values.size(); ++i) {
      const auto k = static_cast<size_t>(static_cast<int64_t>(i) % c);
      EXPECT_EQ(y.data<float>()[i], (static_cast<float>(values[i]) - normalized.options().mean[k]) *
                                        (1.0f / normalized.options().std[k]));
      EXPECT_EQ(r.data<float>()[i], static_cast<float>(values[i]));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, InputPipelineTest, ::testing::Values(DeviceKind::cpu, DeviceKind::sim),
                         [](const auto& info) { return std::string(device_kind_name(info.param)); });

void expect_refused(const data::InputOptions& o, const std::string& message) {
  EXPECT_EQ(data::input_options_problem(o), message);
  auto b = make_cpu_backend();
  try {
    data::InputPipeline p(*b, o);
    ADD_FAILURE() << "accepted: " << message;
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(InputPipelineRefusals, NameTheFileAndTheFix) {
  data::InputOptions o = image_options(DType::f32, DType::f32);
  o.sample_shape = {256};
  o.mean.assign(256, 0.0f);
  o.std.assign(256, 1.0f);
  o.augment = true;
  expect_refused(o, "data.augment crops and flips [H, W, C] images, but the samples of images.h5 are [256]: "
                    "set data.augment = false");
  o = image_options(DType::f32, DType::f32);
  o.mean.pop_back();
  expect_refused(o, "data set images.h5 stores 2 means and 3 standard deviations for samples of 3 channels "
                    "(shape [6, 5, 3]): recompute them with `st-info --add-stats images.h5`");
  o = image_options(DType::f32, DType::f32);
  o.std[1] = NAN;
  EXPECT_NE(data::input_options_problem(o).find("stores mean 100.250000 and std nan for channel 1"), std::string::npos)
      << data::input_options_problem(o);
  o = image_options(DType::i32, DType::f32);
  expect_refused(o, "data set images.h5 stores i32 samples; the trainer reads uint8, f16 and f32");
}

}  // namespace
