// BucketTuner: comm.bucket_mb = auto in a training run. At start-up it probes the all-reduce on the
// gradient communicator (sizes up to the whole gradient, in the wire type); in the first steps of
// the run it times backward layer by layer (after a device synchronize per layer, in those steps
// only); then it picks the bucket size with the least predicted exposed time, the same on every rank.
// A fixed comm.bucket_mb is passed through. run.json records the report (bucket_report_json).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/bucket_size_choice.hpp"
#include "scaletrain/train/config.hpp"

namespace scaletrain::train {

struct BucketReport {
  std::string setting = "fixed";  // "auto" or "fixed"
  double bucket_mb = 0;           // in use at the end (for one bucket, the whole gradient)
  bool one_bucket = false;
  int64_t buckets = 0;            // in use at the end
  // auto, 2+ ranks: the step after which the size was chosen (-1: the run ended first and kept the
  // initial single bucket), the probe and its fit, the candidates with their predictions.
  int64_t chosen_after_step = -1;
  std::vector<comm::AllreduceSample> probe;
  std::optional<comm::AlphaBetaFit> fit;
  double probe_seconds = 0;
  std::vector<comm::BucketCandidate> candidates;
  comm::BackwardProfile backward;  // the timed backward pass the prediction used (slowest rank)
  std::string note;
};

nlohmann::json bucket_report_json(const BucketReport& r);

class BucketTuner {
 public:
  // slice_elements: f32 elements per gradient slice in ready order. host: the MPI communicator
  // (agreement); transport: what carries the gradients (the probe runs on it). Collective.
  BucketTuner(const RunConfig& cfg, comm::Communicator& host, comm::Communicator& transport, Backend& backend,
              std::vector<int64_t> slice_elements);

  int64_t bucket_bytes() const { return bucket_bytes_; }  // what GradientBuckets is built with now

  // Whether backward of `step` is timed (the first call names the run's first step).
  bool measuring(int64_t step);
  void backward_begin();
  void layer_ready(size_t slices);  // a layer's gradients are marked ready
  void backward_end();
  // After a step: true when the size has just been chosen (collective); rebuild the buckets with
  // bucket_bytes(), then call set_bucket_count.
  bool choose_after(int64_t step);
  void set_bucket_count(int64_t n) { report_.buckets = n; }

  const BucketReport& report() const { return report_; }
  std::string choice_line() const;  // rank 0's line about the choice

  static constexpr int kMeasuredSteps = 3;  // the run's steps 2 to 4 (the first warms caches up)

 private:
  void probe(comm::Communicator& transport, Backend& backend);

  const RunConfig& cfg_;
  comm::Communicator& host_;
  std::vector<int64_t> slices_;
  int64_t total_elements_ = 0;
  int64_t bucket_bytes_ = 0;
  bool tuning_ = false;
  bool transport_queues_on_stream_ = false;  // stream-ordered buckets: no polls
  Backend& backend_;
  int64_t first_step_ = -1;
  int measured_ = 0;
  // Per layer (backward order): the least time from the previous mark (or backward's start) over the
  // measured steps; the least tail after the last layer.
  std::vector<double> layer_seconds_, this_step_;
  std::vector<size_t> layer_slices_;
  double tail_seconds_ = 0, mark_ = 0;
  BucketReport report_;
};

}  // namespace scaletrain::train
