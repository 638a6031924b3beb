// The gradient bucket size that comm.bucket_mb = auto picks: the setting itself ("auto" or a fixed
// size in MB), and a pure model of the exposed all-reduce time of one step (backward's ready times
// of the gradients, a measured all-reduce curve) evaluated over candidate sizes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/comm/allreduce_probe.hpp"

namespace scaletrain::comm {

inline constexpr double kBytesPerMB = 1024.0 * 1024.0;

// comm.bucket_mb: "auto" (measured, the default) or a fixed positive size in MB.
struct BucketSizeSetting {
  bool automatic = true;
  double fixed_mb = 0;  // when !automatic
  static BucketSizeSetting fixed(double mb) { return BucketSizeSetting{false, mb}; }
};
// "auto" or a positive number (TOML quotes removed); anything else throws an Error naming
// comm.bucket_mb and the value.
BucketSizeSetting parse_bucket_size_setting(const std::string& text);
std::string bucket_size_setting_text(const BucketSizeSetting& s);  // "auto" or the number ("4.0")

// Slices (f32 elements, in ready order) into buckets, the grouping GradientBuckets builds: a new bucket starts
// when the next slice would take the current one past bucket_bytes (f32 bytes). Returns the number of
// slices in each bucket.
std::vector<size_t> bucket_slice_counts(const std::vector<int64_t>& slice_elements, int64_t bucket_bytes);

// An all-reduce's seconds for a message size, interpolated linearly between probed sizes (bandwidth
// is not linear in size); below the smallest probed size, the smallest's time; above the largest,
// the largest's time per byte.
class AllreduceCurve {
 public:
  explicit AllreduceCurve(std::vector<AllreduceSample> samples);  // at least one; sorted by bytes here
  double seconds(int64_t bytes) const;
  // MPI_Test polls to complete: the smallest probed size at or above bytes (the largest beyond),
  // at least 1 (1 where the probe did not count polls).
  int polls(int64_t bytes) const;
  const std::vector<AllreduceSample>& samples() const { return samples_; }

 private:
  std::vector<AllreduceSample> samples_;
};

// One measured backward pass. Per layer in backward order: seconds from backward's start to the
// point where its gradients were marked ready (and the buckets polled), and how many slices it
// produced; then when backward ended.
struct BackwardProfile {
  std::vector<double> layer_ready_s;
  std::vector<size_t> layer_slices;
  double end_s = 0;
};

struct BucketModelInputs {
  std::vector<int64_t> slice_elements;  // f32 elements per gradient slice, in ready order
  BackwardProfile backward;
  int64_t wire_bytes_per_element = 4;   // comm.dtype: 4 (fp32) or 2 (bf16, fp16)
  // comm.progress = test: a bucket starts at the poll where its last slice is ready (several may be
  // in flight) and advances only when polled: it completes at the poll that is both its probed poll
  // count after its start and at least its time after it. One unfinished when backward ends is
  // finished in wait_all(), which takes the share of its time its missing polls stand for.
  // false (a communication thread): buckets run one after another, each from when it is ready and
  // the previous one has finished.
  bool completion_at_polls = true;
};

// Predicted exposed seconds (after backward's end, waiting for all-reduces) with buckets of
// bucket_bytes (f32 bytes); a bucket's all-reduce takes curve.seconds(its wire bytes) (see
// completion_at_polls for when it starts and is seen to finish).
double predicted_exposed_seconds(const BucketModelInputs& in, const AllreduceCurve& curve, int64_t bucket_bytes);

struct BucketCandidate {
  double mb = 0;           // bucket size (f32 MB); for one_bucket, the whole gradient
  bool one_bucket = false;
  int64_t buckets = 0;
  double predicted_exposed_s = 0;
};

struct BucketChoice {
  BucketCandidate chosen;
  std::vector<BucketCandidate> candidates;
};

// The default candidate sizes (MB): 0.0625, 0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 25 (the two smallest for
// models of a few hundred KB of gradients, as LeNet); one bucket is always a candidate.
std::vector<double> default_bucket_candidates_mb();

// The candidate with the least predicted exposed time. Sizes at or above the whole gradient are one
// bucket. Near-ties (within 2% of the least, 5 us, or 0.1% of backward) go to the larger bucket
// (fewer calls). With
// world_size 1 nothing is reduced: one bucket, no candidates evaluated.
BucketChoice choose_bucket_size(const BucketModelInputs& in, const AllreduceCurve& curve, int world_size,
                                const std::vector<double>& candidates_mb = default_bucket_candidates_mb());

}  // namespace scaletrain::comm
