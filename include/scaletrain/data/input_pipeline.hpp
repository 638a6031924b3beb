// InputPipeline: what happens between the loader's device batch and the model's input, as kernels
// on the compute stream: the random crop and horizontal flip of [H, W, C] images (training batches
// only), normalization by the data file's per-channel mean/std, and the cast to the compute type.
// Where the device's memory is apart from the host's (sim, cuda), the batch is first copied from the
// loader's slot into the pipeline's own device buffers, so that the step's kernels read the same
// addresses every step (the same launches, as a captured CUDA graph needs: PyTorch's static inputs).
// Samples arrive as the file stores them (uint8, f16 or f32; any [..., C] shape), so the host and
// the host-to-device copy move stored bytes, and a float copy of a uint8 data set prepares to the
// same inputs bit for bit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/tensor.hpp"
#include "scaletrain/data/loader.hpp"

namespace scaletrain::data {

struct InputOptions {
  std::string source;       // the data file, for error messages
  Shape sample_shape;       // [..., C]: the last dimension is the channel
  DType stored = DType::u8;  // the file's sample type: u8, f16 or f32
  DType compute = DType::f32;
  int64_t batch = 0;              // rows per step on this rank
  std::vector<float> mean, std;  // per channel; both empty: the raw values pass unnormalized
  bool augment = false;           // crop and flip training batches ([H, W, C] samples only)
  int64_t augment_pad = 2;
  bool augment_flip = true;
  uint64_t seed = 0;
};

// The problem with `o` (empty: none), naming the file and the fix: a stored type the pipeline does
// not read, augmentation asked of samples that are not [H, W, C] images, statistics of the wrong
// length or with a non-finite value.
std::string input_options_problem(const InputOptions& o);

class InputPipeline {
 public:
  // Allocates the input batch and the device statistics. Throws Error with input_options_problem's
  // message where there is one.
  InputPipeline(Backend& backend, InputOptions options);

  // Queues on the compute stream, after the batch's host-to-device copy: the augmentation (when
  // `training` and data.augment; `step` is the step number in device memory, f64, which its kernel
  // reads, so every step launches alike), the normalization and the cast. Returns the model's input,
  // [batch, ...sample_shape] in the compute type, valid until the next call.
  const Tensor& prepare(const Batch& batch, const double* step, bool training);

  const Tensor& input() const { return input_; }
  // The prepared batch's labels (i32 [batch]) and data-set indices (i64 [batch]) as the step's kernels
  // read them: the pipeline's own device buffers (the batch's own where the device is the host).
  // Valid until the next prepare().
  const Tensor& labels() const { return labels_; }
  const Tensor& indices() const { return indices_; }
  const InputOptions& options() const { return o_; }
  int64_t channels() const { return o_.sample_shape.back(); }

 private:
  void take(const Batch& batch);
  void augment(const double* step);
  void normalize(const Tensor& samples);

  Backend& backend_;
  InputOptions o_;
  Tensor input_;      // [batch, ...sample_shape], compute type
  Tensor augmented_;  // the cropped and flipped samples, stored type (augment only)
  bool own_batch_;    // the device's memory is apart from the host's: the batch is copied in
  Tensor samples_, labels_, indices_;  // the step's batch: own buffers, or the loader's slot
  Tensor mean_, inv_std_;                      // f32 [C] on the device
  std::vector<float> host_mean_, host_inv_std_;  // the same on the host (one-channel kernels)
};

}  // namespace scaletrain::data
