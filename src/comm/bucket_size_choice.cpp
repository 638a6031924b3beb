// comm.bucket_mb parsing, and the pure model behind comm.bucket_mb = auto: bucket layout, the
// interpolated all-reduce curve, predicted exposed time per candidate size, and the choice.
#include "scaletrain/comm/bucket_size_choice.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain::comm {

BucketSizeSetting parse_bucket_size_setting(const std::string& text) {
  std::string s = text;
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  if (s == "auto") return BucketSizeSetting{};
  size_t used = 0;
  double mb = 0;
  try {
    mb = std::stod(s, &used);
  } catch (...) {
    used = 0;
  }
  ST_CHECK(used == s.size() && !s.empty() && std::isfinite(mb) && mb > 0, "comm.bucket_mb = '", s,
           "' is neither auto nor a positive size in MB (examples: auto, 1, 0.5, 25)");
  return BucketSizeSetting::fixed(mb);
}

std::string bucket_size_setting_text(const BucketSizeSetting& s) {
  if (s.automatic) return "auto";
  std::ostringstream os;
  os.precision(10);
  os << s.fixed_mb;
  std::string t = os.str();
  if (t.find_first_of(".eE") == std::string::npos) t += ".0";
  return t;
}

std::vector<size_t> bucket_slice_counts(const std::vector<int64_t>& slice_elements, int64_t bucket_bytes) {
  std::vector<size_t> counts;
  int64_t in_current = 0;
  for (int64_t e : slice_elements) {
    if (counts.empty() || (in_current + e) * 4 > bucket_bytes) {
      counts.push_back(0);
      in_current = 0;
    }
    ++counts.back();
    in_current += e;
  }
  return counts;
}

AllreduceCurve::AllreduceCurve(std::vector<AllreduceSample> samples) : samples_(std::move(samples)) {
  ST_CHECK(!samples_.empty(), "AllreduceCurve needs at least one probed size");
  std::sort(samples_.begin(), samples_.end(),
            [](const AllreduceSample& a, const AllreduceSample& b) { return a.bytes < b.bytes; });
  for (const AllreduceSample& s : samples_)
    ST_CHECK(s.bytes > 0 && s.seconds > 0, "AllreduceCurve: probed size ", s.bytes, " bytes took ", s.seconds,
             " s; sizes and times must be positive");
}

int AllreduceCurve::polls(int64_t bytes) const {
  const auto it = std::lower_bound(samples_.begin(), samples_.end(), bytes,
                                   [](const AllreduceSample& s, int64_t b) { return s.bytes < b; });
  return std::max(1, it == samples_.end() ? samples_.back().polls : it->polls);
}

double AllreduceCurve::seconds(int64_t bytes) const {
  const AllreduceSample& first = samples_.front();
  const AllreduceSample& last = samples_.back();
  if (bytes <= first.bytes) return first.seconds;
  if (bytes >= last.bytes) return last.seconds * static_cast<double>(bytes) / static_cast<double>(last.bytes);
  const auto hi = std::lower_bound(samples_.begin(), samples_.end(), bytes,
                                   [](const AllreduceSample& s, int64_t b) { return s.bytes < b; });
  const auto lo = hi - 1;
  const double f = static_cast<double>(bytes - lo->bytes) / static_cast<double>(hi->bytes - lo->bytes);
  return lo->seconds + f * (hi->seconds - lo->seconds);
}

namespace {

// When each slice is ready, and the poll times (layer ends), from the profile.
struct ReadyTimes {
  std::vector<double> slice;
  std::vector<double> polls;  // increasing
};

ReadyTimes ready_times(const BucketModelInputs& in) {
  const BackwardProfile& p = in.backward;
  ST_CHECK(p.layer_ready_s.size() == p.layer_slices.size(), "bucket model: ", p.layer_ready_s.size(),
           " layer times for ", p.layer_slices.size(), " layers");
  ReadyTimes r;
  for (size_t l = 0; l < p.layer_slices.size(); ++l) {
    r.slice.insert(r.slice.end(), p.layer_slices[l], p.layer_ready_s[l]);
    r.polls.push_back(p.layer_ready_s[l]);
  }
  ST_CHECK(r.slice.size() == in.slice_elements.size(), "bucket model: the backward profile has ", r.slice.size(),
           " gradient slices, the model ", in.slice_elements.size());
  std::sort(r.polls.begin(), r.polls.end());
  return r;
}

// A bucket of the model: its bytes on the wire, ready when its last slice is.
struct ModelBucket {
  int64_t wire_bytes;
  double ready;
};

std::vector<ModelBucket> bucket_spans(const BucketModelInputs& in, const ReadyTimes& r, int64_t bucket_bytes) {
  std::vector<ModelBucket> spans;
  size_t slice = 0;
  for (size_t n : bucket_slice_counts(in.slice_elements, bucket_bytes)) {
    ModelBucket b{0, 0};
    for (size_t i = 0; i < n; ++i, ++slice) {
      b.wire_bytes += in.slice_elements[slice] * in.wire_bytes_per_element;
      b.ready = std::max(b.ready, r.slice[slice]);
    }
    spans.push_back(b);
  }
  return spans;
}

// A communication thread: one all-reduce after another, each from when it is ready.
double exposed_with_thread(const std::vector<ModelBucket>& spans, const AllreduceCurve& curve, double end) {
  double finished = 0;
  for (const ModelBucket& b : spans) finished = std::max(b.ready, finished) + curve.seconds(b.wire_bytes);
  return std::max(0.0, finished - end);
}

// MPI_Test polls: every bucket starts at its ready poll and completes at a later poll (see
// BucketModelInputs::completion_at_polls); what is left at backward's end is waited for in order.
double exposed_with_polls(const std::vector<ModelBucket>& spans, const AllreduceCurve& curve, const ReadyTimes& r) {
  double exposed = 0;
  for (const ModelBucket& b : spans) {
    const double t = curve.seconds(b.wire_bytes);
    const int needed = curve.polls(b.wire_bytes);
    // Polls after the start (the start's own poll does not count: the all-reduce was just issued there).
    const auto first = std::upper_bound(r.polls.begin(), r.polls.end(), b.ready);
    int got = 0;
    bool done = false;
    for (auto it = first; it != r.polls.end() && !done; ++it) {
      ++got;
      done = got >= needed && *it >= b.ready + t;
    }
    if (!done) exposed += t * static_cast<double>(needed - std::min(got, needed - 1)) / needed;
  }
  return exposed;
}

}  // namespace

double predicted_exposed_seconds(const BucketModelInputs& in, const AllreduceCurve& curve, int64_t bucket_bytes) {
  const ReadyTimes r = ready_times(in);
  const std::vector<ModelBucket> spans = bucket_spans(in, r, bucket_bytes);
  return in.completion_at_polls ? exposed_with_polls(spans, curve, r)
                                : exposed_with_thread(spans, curve, in.backward.end_s);
}

std::vector<double> default_bucket_candidates_mb() { return {0.0625, 0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 25}; }

BucketChoice choose_bucket_size(const BucketModelInputs& in, const AllreduceCurve& curve, int world_size,
                                const std::vector<double>& candidates_mb) {
  const int64_t total = std::accumulate(in.slice_elements.begin(), in.slice_elements.end(), int64_t{0});
  BucketCandidate whole;
  whole.mb = static_cast<double>(std::max<int64_t>(total, 1) * 4) / kBytesPerMB;
  whole.one_bucket = true;
  whole.buckets = 1;
  BucketChoice c;
  if (world_size <= 1) {
    c.chosen = whole;
    return c;
  }
  whole.predicted_exposed_s = predicted_exposed_seconds(in, curve, std::max<int64_t>(total, 1) * 4);
  std::vector<double> sizes = candidates_mb;
  std::sort(sizes.begin(), sizes.end());
  for (double mb : sizes) {
    const auto bytes = static_cast<int64_t>(mb * kBytesPerMB);
    if (bytes <= 0 || bytes >= total * 4) continue;  // one bucket, listed below
    BucketCandidate k;
    k.mb = mb;
    k.buckets = static_cast<int64_t>(bucket_slice_counts(in.slice_elements, bytes).size());
    k.predicted_exposed_s = predicted_exposed_seconds(in, curve, bytes);
    c.candidates.push_back(k);
  }
  c.candidates.push_back(whole);
  double least = c.candidates.front().predicted_exposed_s;
  for (const BucketCandidate& k : c.candidates) least = std::min(least, k.predicted_exposed_s);
  // Differences below 0.1% of backward are below what a step's timing resolves (ranks drift apart by
  // more from step to step): take the fewer calls.
  const double tie = std::max({0.02 * least, 5e-6, 1e-3 * in.backward.end_s});
  c.chosen = c.candidates.front();
  for (const BucketCandidate& k : c.candidates)  // increasing sizes: the last near-tie is the largest
    if (k.predicted_exposed_s <= least + tie) c.chosen = k;
  return c;
}

}  // namespace scaletrain::comm
