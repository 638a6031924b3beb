// comm.bucket_mb = auto during a run: the start-up probe, backward timed per layer in the first
// steps, the agreed choice, and its report for run.json and rank 0's output.
#include "scaletrain/train/bucket_tuner.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::train {

namespace {
constexpr int64_t kProbeMinBytes = 16 * 1024;
}

BucketTuner::BucketTuner(const RunConfig& cfg, comm::Communicator& host, comm::Communicator& transport,
                         Backend& backend, std::vector<int64_t> slice_elements)
    : cfg_(cfg), host_(host), slices_(std::move(slice_elements)), backend_(backend) {
  total_elements_ = std::accumulate(slices_.begin(), slices_.end(), int64_t{0});
  const int64_t whole = std::max<int64_t>(total_elements_, 1) * 4;
  if (!cfg.bucket_mb.automatic) {
    bucket_bytes_ = static_cast<int64_t>(cfg.bucket_mb.fixed_mb * comm::kBytesPerMB);
    report_.bucket_mb = cfg.bucket_mb.fixed_mb;
    return;
  }
  report_.setting = "auto";
  // Until the choice (and for good on one rank): one bucket.
  bucket_bytes_ = whole;
  report_.bucket_mb = static_cast<double>(whole) / comm::kBytesPerMB;
  report_.one_bucket = true;
  if (host.size() == 1) {
    report_.note = "1 rank: nothing is all-reduced, so the bucket size does not matter; one bucket";
    return;
  }
  tuning_ = true;
  transport_queues_on_stream_ = transport.queues_on_stream();
  probe(transport, backend);
}

void BucketTuner::probe(comm::Communicator& transport, Backend& backend) {
  const DType wire = precision_dtype(cfg_.comm_dtype);
  const auto elem = static_cast<int64_t>(dtype_size(wire));
  const int64_t total = std::max<int64_t>(total_elements_, 1) * elem;
  const std::vector<int64_t> sizes = comm::probe_sizes(std::min(kProbeMinBytes, total), total, elem);
  const Shape shape{total / elem};
  // A device communicator reduces device memory; MPI reduces host memory (staged, for sim/cuda).
  Tensor buffer = transport.queues_on_stream() ? backend.zeros(shape, wire, "bucket probe")
                                               : Tensor::zeros(shape, wire, "bucket probe (host)");
  backend.synchronize();
  void* data = transport.queues_on_stream() ? buffer.device_raw() : buffer.raw();
  host_.barrier();
  const double t0 = now_seconds();
  comm::ProbeOptions options;
  // MPI_Test polls drive the all-reduces: count the polls each size needs.
  if (cfg_.progress == comm::CommProgress::test && !transport.queues_on_stream()) options.polled_iters = 3;
  report_.probe = comm::probe_allreduce(transport, data, wire, sizes, options);
  comm::take_slowest_rank(host_, report_.probe);
  double seconds = now_seconds() - t0;
  host_.allreduce(&seconds, 1, DType::f64, comm::ReduceOp::max);
  report_.probe_seconds = seconds;
  if (report_.probe.size() >= 2) report_.fit = comm::fit_alpha_beta(report_.probe);
}

bool BucketTuner::measuring(int64_t step) {
  if (!tuning_) return false;
  if (first_step_ < 0) first_step_ = step;
  return step > first_step_ && step <= first_step_ + kMeasuredSteps;
}

void BucketTuner::backward_begin() {
  this_step_.clear();
  layer_slices_.clear();
  backend_.compute_stream().synchronize();
  mark_ = now_seconds();
}

void BucketTuner::layer_ready(size_t slices) {
  backend_.compute_stream().synchronize();
  const double now = now_seconds();
  this_step_.push_back(now - mark_);
  layer_slices_.push_back(slices);
  mark_ = now;
}

void BucketTuner::backward_end() {
  backend_.compute_stream().synchronize();
  const double tail = now_seconds() - mark_;
  if (measured_ == 0) {
    layer_seconds_ = this_step_;
    tail_seconds_ = tail;
  } else {
    ST_CHECK(this_step_.size() == layer_seconds_.size(), "BucketTuner: backward reported ", this_step_.size(),
             " layers, earlier ", layer_seconds_.size());
    for (size_t i = 0; i < this_step_.size(); ++i) layer_seconds_[i] = std::min(layer_seconds_[i], this_step_[i]);
    tail_seconds_ = std::min(tail_seconds_, tail);
  }
  ++measured_;
}

bool BucketTuner::choose_after(int64_t step) {
  if (!tuning_ || step != first_step_ + kMeasuredSteps) return false;
  tuning_ = false;
  // Every rank models the slowest rank's backward, then takes rank 0's choice.
  std::vector<double> t = layer_seconds_;
  t.push_back(tail_seconds_);
  host_.allreduce(t.data(), static_cast<int64_t>(t.size()), DType::f64, comm::ReduceOp::max);
  comm::BucketModelInputs in;
  in.slice_elements = slices_;
  in.wire_bytes_per_element = static_cast<int64_t>(dtype_size(precision_dtype(cfg_.comm_dtype)));
  in.completion_at_polls = cfg_.progress == comm::CommProgress::test && !transport_queues_on_stream_;
  double clock = 0;
  for (size_t l = 0; l + 1 < t.size(); ++l) {
    clock += t[l];
    in.backward.layer_ready_s.push_back(clock);
  }
  in.backward.layer_slices = layer_slices_;
  in.backward.end_s = clock + t.back();
  const comm::BucketChoice c = comm::choose_bucket_size(in, comm::AllreduceCurve(report_.probe), host_.size());
  int64_t bytes = c.chosen.one_bucket ? std::max<int64_t>(total_elements_, 1) * 4
                                      : static_cast<int64_t>(c.chosen.mb * comm::kBytesPerMB);
  host_.broadcast(&bytes, sizeof bytes, 0);
  bucket_bytes_ = bytes;
  report_.candidates = c.candidates;
  report_.chosen_after_step = step;
  report_.backward = in.backward;
  report_.one_bucket = bytes >= total_elements_ * 4;
  report_.bucket_mb = report_.one_bucket ? static_cast<double>(std::max<int64_t>(total_elements_, 1) * 4) / comm::kBytesPerMB
                                         : static_cast<double>(bytes) / comm::kBytesPerMB;
  return true;
}

std::string BucketTuner::choice_line() const {
  const BucketReport& r = report_;
  double exposed = 0, one = 0;
  for (const comm::BucketCandidate& k : r.candidates) {
    if (k.one_bucket) one = k.predicted_exposed_s;
    if (k.one_bucket == r.one_bucket && (r.one_bucket || k.mb == r.bucket_mb)) exposed = k.predicted_exposed_s;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "buckets: comm.bucket_mb = auto -> %s%.3g MB (%lld buckets), predicted exposed all-reduce %.3f ms "
                "(one bucket: %.3f ms) | backward %.2f ms timed in steps %lld-%lld | probe %zu sizes in %.0f ms",
                r.one_bucket ? "one bucket, " : "", r.bucket_mb, static_cast<long long>(r.buckets), exposed * 1e3,
                one * 1e3, r.backward.end_s * 1e3, static_cast<long long>(r.chosen_after_step - kMeasuredSteps + 1),
                static_cast<long long>(r.chosen_after_step), r.probe.size(), r.probe_seconds * 1e3);
  std::string s = line;
  if (r.fit)
    s += " (alpha " + std::to_string(r.fit->alpha_s * 1e6) + " us, 1/beta " +
         std::to_string(r.fit->beta_s_per_byte > 0 ? 1e-9 / r.fit->beta_s_per_byte : 0.0) + " GB/s)";
  return s;
}

nlohmann::json bucket_report_json(const BucketReport& r) {
  nlohmann::json j = {{"setting", r.setting}, {"bucket_mb", r.bucket_mb}, {"one_bucket", r.one_bucket},
                      {"buckets", r.buckets}};
  if (r.setting != "auto") return j;
  j["note"] = r.note;
  j["chosen_after_step"] = r.chosen_after_step >= 0 ? nlohmann::json(r.chosen_after_step) : nlohmann::json(nullptr);
  j["probe_seconds"] = r.probe_seconds;
  j["probe"] = nlohmann::json::array();
  for (const comm::AllreduceSample& s : r.probe)
    j["probe"].push_back({{"bytes", s.bytes}, {"seconds", s.seconds}, {"polls", s.polls}});
  if (r.fit)
    j["fit"] = {{"model", "t = alpha + bytes * beta"}, {"alpha_us", r.fit->alpha_s * 1e6},
                {"beta_s_per_byte", r.fit->beta_s_per_byte}, {"rms_relative_error", r.fit->rms_relative_error}};
  else
    j["fit"] = nullptr;
  j["backward"] = {{"ms", r.backward.end_s * 1e3}, {"layer_ready_ms", nlohmann::json::array()},
                   {"layer_slices", r.backward.layer_slices}};
  for (double t : r.backward.layer_ready_s) j["backward"]["layer_ready_ms"].push_back(t * 1e3);
  j["candidates"] = nlohmann::json::array();
  for (const comm::BucketCandidate& k : r.candidates)
    j["candidates"].push_back({{"bucket_mb", k.mb}, {"one_bucket", k.one_bucket}, {"buckets", k.buckets},
                               {"predicted_exposed_ms", k.predicted_exposed_s * 1e3}});
  return j;
}

}  // namespace scaletrain::train
