// The all-reduce probe (time against size on the real communicator) and its alpha-beta fit.
#include "scaletrain/comm/allreduce_probe.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::comm {
namespace {

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Polls (test() after a busy gap, as between backward layers) until the all-reduce completes.
int polls_to_complete(Communicator& transport, void* buffer, int64_t count, DType dtype, double gap, int max_polls) {
  transport.barrier();
  const std::unique_ptr<Request> r = transport.allreduce_async(buffer, count, dtype, ReduceOp::sum);
  for (int polls = 1; polls <= max_polls; ++polls) {
    const double until = now_seconds() + gap;
    while (now_seconds() < until) {
    }
    if (r->test()) return polls;
  }
  r->wait();
  return max_polls;
}

// One size's sample: the median of options.iters timed all-reduces after the warm-up, and the median
// poll count of options.polled_iters polled ones.
AllreduceSample probe_one_size(Communicator& transport, void* buffer, DType dtype, int64_t bytes,
                               const ProbeOptions& options) {
  const int64_t count = bytes / static_cast<int64_t>(dtype_size(dtype));
  for (int w = 0; w < options.warmup; ++w) transport.allreduce_async(buffer, count, dtype, ReduceOp::sum)->wait();
  transport.barrier();
  std::vector<double> t(static_cast<size_t>(options.iters));
  for (double& ti : t) {
    const double t0 = now_seconds();
    transport.allreduce_async(buffer, count, dtype, ReduceOp::sum)->wait();
    ti = now_seconds() - t0;
  }
  AllreduceSample sample{bytes, median(t), 0};
  if (options.polled_iters > 0) {
    std::vector<double> polls(static_cast<size_t>(options.polled_iters));
    const double gap = std::max(options.min_poll_gap_s, sample.seconds);
    for (double& p : polls) p = polls_to_complete(transport, buffer, count, dtype, gap, options.max_polls);
    sample.polls = static_cast<int>(median(polls));
  }
  return sample;
}

}  // namespace

AlphaBetaFit fit_alpha_beta(const std::vector<AllreduceSample>& samples) {
  double a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (const AllreduceSample& s : samples) {
    ST_CHECK(s.seconds > 0, "alpha-beta fit: the all-reduce of ", s.bytes, " bytes took ", s.seconds,
             " s; every time must be positive");
    const double t = s.seconds, x = static_cast<double>(s.bytes), w = 1.0 / (t * t);
    a11 += w;
    a12 += w * x;
    a22 += w * x * x;
    b1 += w * t;
    b2 += w * x * t;
  }
  const double det = a11 * a22 - a12 * a12;
  ST_CHECK(samples.size() >= 2 && det != 0, "alpha-beta fit needs at least two distinct sizes (got ", samples.size(),
           ")");
  AlphaBetaFit f;
  f.alpha_s = (b1 * a22 - b2 * a12) / det;
  f.beta_s_per_byte = (a11 * b2 - a12 * b1) / det;
  double e2 = 0;
  for (const AllreduceSample& s : samples) {
    const double m = f.alpha_s + f.beta_s_per_byte * static_cast<double>(s.bytes);
    e2 += (m - s.seconds) * (m - s.seconds) / (s.seconds * s.seconds);
  }
  f.rms_relative_error = std::sqrt(e2 / static_cast<double>(samples.size()));
  return f;
}

std::vector<int64_t> probe_sizes(int64_t min_bytes, int64_t max_bytes, int64_t elem_bytes) {
  ST_CHECK(elem_bytes > 0 && min_bytes > 0 && max_bytes > 0, "probe_sizes: sizes must be positive (min ", min_bytes,
           ", max ", max_bytes, ", element ", elem_bytes, ")");
  auto whole = [&](int64_t b) { return std::max(elem_bytes, b / elem_bytes * elem_bytes); };
  std::vector<int64_t> sizes;
  for (int64_t b = min_bytes; b < max_bytes; b *= 2) sizes.push_back(whole(b));
  sizes.push_back(whole(max_bytes));
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<AllreduceSample> probe_allreduce(Communicator& transport, void* buffer, DType dtype,
                                             const std::vector<int64_t>& sizes, const ProbeOptions& options) {
  ST_CHECK(options.iters > 0 && options.warmup >= 0 && options.sweeps > 0, "probe_allreduce: iters and sweeps must ",
           "be positive and warmup >= 0 (got ", options.iters, ", ", options.sweeps, ", ", options.warmup, ")");
  const auto elem = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t bytes : sizes)
    ST_CHECK(bytes >= elem && bytes % elem == 0, "probe_allreduce: ", bytes, " bytes is not a whole number of ",
             dtype_name(dtype), " elements");
  std::vector<AllreduceSample> out;
  for (int sweep = 0; sweep < options.sweeps; ++sweep)
    for (size_t i = 0; i < sizes.size(); ++i) {
      const AllreduceSample s = probe_one_size(transport, buffer, dtype, sizes[i], options);
      if (sweep == 0) {
        out.push_back(s);
        continue;
      }
      out[i].seconds = std::min(out[i].seconds, s.seconds);
      out[i].polls = std::min(out[i].polls, s.polls);
    }
  return out;
}

void take_slowest_rank(Communicator& host, std::vector<AllreduceSample>& samples) {
  const size_t n = samples.size();
  std::vector<double> t(2 * n);
  for (size_t i = 0; i < n; ++i) {
    t[i] = samples[i].seconds;
    t[n + i] = samples[i].polls;
  }
  if (!t.empty()) host.allreduce(t.data(), static_cast<int64_t>(t.size()), DType::f64, ReduceOp::max);
  for (size_t i = 0; i < n; ++i) {
    samples[i].seconds = t[i];
    samples[i].polls = static_cast<int>(t[n + i]);
  }
}

}  // namespace scaletrain::comm
