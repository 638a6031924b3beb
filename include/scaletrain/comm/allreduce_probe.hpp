// AllreduceProbe: all-reduce time against message size on a real communicator (sweeps over the sizes,
// each a warm-up and timed repetitions; per size each rank's median in its fastest sweep, then the
// slowest rank's, so every rank holds the same curve), and the alpha-beta fit
// t = alpha + bytes * beta of such a curve (scaletrain-bench-allreduce and comm.bucket_mb = auto).
#pragma once
#include <cstdint>
#include <vector>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

// One probed message size: bytes on the wire, seconds per all-reduce (allreduce_async + wait), and
// how many MPI_Test polls it took to complete when polled at intervals no shorter than that time
// (0: not measured). An all-reduce only advances inside MPI calls, so under comm.progress = test it
// needs this many polls (between backward layers) whatever the time between them.
struct AllreduceSample {
  int64_t bytes;
  double seconds;
  int polls = 0;
};

// t = alpha + bytes * beta, by least squares on the relative error (each size weighs alike, so the
// latency of small messages is not drowned by the large ones).
struct AlphaBetaFit {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  double rms_relative_error = 0;
};
AlphaBetaFit fit_alpha_beta(const std::vector<AllreduceSample>& samples);

struct ProbeOptions {
  int warmup = 2;         // untimed all-reduces per size
  int iters = 5;          // timed all-reduces per size
  int polled_iters = 0;   // all-reduces per size polled with test() to count polls (0: none)
  double min_poll_gap_s = 200e-6;  // the polls' interval: this or the size's time, the longer
  int max_polls = 64;     // then wait() (recorded as max_polls)
  // Passes over all the sizes; each size keeps its fastest pass (seconds and polls each their least),
  // so that a pass slowed by something else on the node (a rank descheduled, a neighbour's burst of
  // memory traffic) does not stand for the network: a single slowed pass would make small buckets
  // look cheaper than they are and pick a size that trains slower.
  int sweeps = 3;
};

// Powers of two from min_bytes up to (not including) max_bytes, then max_bytes itself; every size a
// whole number of elements of elem_bytes.
std::vector<int64_t> probe_sizes(int64_t min_bytes, int64_t max_bytes, int64_t elem_bytes);

// Times allreduce_async + wait (what GradientBuckets issues) of each size on `buffer` (at least the
// largest size; a device buffer for a communicator that queues_on_stream()), in place, sum of
// `dtype`. Collective over `transport`. Returns this rank's median seconds per size (robust to a rank
// descheduled for one repetition) in the size's fastest sweep (robust to a slow stretch).
std::vector<AllreduceSample> probe_allreduce(Communicator& transport, void* buffer, DType dtype,
                                             const std::vector<int64_t>& sizes, const ProbeOptions& options);

// Replaces every sample's seconds and polls by the largest over the ranks of `host` (a host communicator, MPI).
void take_slowest_rank(Communicator& host, std::vector<AllreduceSample>& samples);

}  // namespace scaletrain::comm
