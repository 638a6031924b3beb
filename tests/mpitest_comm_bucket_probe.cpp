// comm.bucket_mb = auto on the real MPI communicator, at any rank count: the probe's curve is the
// same on every rank (the slowest rank's times), its alpha-beta fit is finite, the choice from it is
// identical on every rank and one of the candidates, and its predicted bucket count is what
// GradientBuckets builds at that size; and a sweep slowed by a late rank does not stand for the
// network.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/allreduce_probe.hpp"
#include "scaletrain/comm/bucket_size_choice.hpp"
#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/comm/mpi_communicator.hpp"

using namespace scaletrain;
using namespace scaletrain::comm;

namespace {

// A lenet-like gradient: uneven slices in ready order, 3.1 MB in all.
std::vector<int64_t> slice_elements() { return {10, 840, 84, 10080, 120, 400000, 16, 2400, 6, 150, 400000}; }

BackwardProfile profile(size_t layers) {
  BackwardProfile p;
  for (size_t l = 0; l < layers; ++l) {
    p.layer_ready_s.push_back(0.2e-3 * static_cast<double>(l + 1));
    p.layer_slices.push_back(1);
  }
  p.end_s = 0.2e-3 * static_cast<double>(layers) + 0.1e-3;
  return p;
}

template <class T>
std::vector<T> everyone(Communicator& c, T mine) {
  std::vector<T> all(static_cast<size_t>(c.size()));
  c.allgather(&mine, sizeof mine, all.data());
  return all;
}

// The real MPI communicator, with rank 0 entering its first `late_calls` all-reduces `delay_s` late
// (a rank descheduled, or busy with something else, while the start-up probe runs).
class LateRankZero final : public Communicator {
 public:
  LateRankZero(Communicator& inner, int late_calls, double delay_s)
      : inner_(inner), late_calls_(late_calls), delay_s_(delay_s) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  int local_rank() const override { return inner_.local_rank(); }
  int local_size() const override { return inner_.local_size(); }
  const std::string& host() const override { return inner_.host(); }
  std::unique_ptr<Request> allreduce_async(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    if (inner_.rank() == 0 && calls_++ < late_calls_)
      std::this_thread::sleep_for(std::chrono::duration<double>(delay_s_));
    return inner_.allreduce_async(buf, count, dtype, op);
  }
  void allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    inner_.allreduce(buf, count, dtype, op);
  }
  void broadcast(void* buf, int64_t bytes, int root) override { inner_.broadcast(buf, bytes, root); }
  void gather(const void* send, int64_t bytes, void* recv, int root) override {
    inner_.gather(send, bytes, recv, root);
  }
  void allgather(const void* send, int64_t bytes, void* recv) override { inner_.allgather(send, bytes, recv); }
  void barrier() override { inner_.barrier(); }
  std::string name() const override { return inner_.name(); }
  [[noreturn]] void abort(int exit_code) override {
    inner_.abort(exit_code);
    std::abort();  // not reached: the inner abort does not return
  }

 private:
  Communicator& inner_;
  int late_calls_, calls_ = 0;
  double delay_s_;
};

}  // namespace

// Rank 0 enters every all-reduce of the probe's first sweep 50 ms late. With one sweep every size then
// reads at least that; with the default three each size keeps a later, undisturbed sweep.
TEST(BucketProbe, ASlowSweepDoesNotStandForTheNetwork) {
  auto c = make_mpi_communicator(MPI_COMM_WORLD);
  const std::vector<int64_t> sizes = probe_sizes(16 * 1024, 1 << 20, 4);
  std::vector<unsigned char> buffer(1 << 20, 0);
  ProbeOptions options{1, 3};
  const int first_sweep_calls = static_cast<int>(sizes.size()) * (options.warmup + options.iters);
  const double delay = 0.05;
  for (int sweeps : {1, ProbeOptions{}.sweeps}) {
    options.sweeps = sweeps;
    LateRankZero late(*c, first_sweep_calls, delay);
    std::vector<AllreduceSample> curve = probe_allreduce(late, buffer.data(), DType::f32, sizes, options);
    take_slowest_rank(*c, curve);
    ASSERT_EQ(curve.size(), sizes.size());
    for (const AllreduceSample& s : curve) {
      if (sweeps == 1)
        EXPECT_GE(s.seconds, 0.9 * delay) << s.bytes << " bytes";
      else
        EXPECT_LT(s.seconds, 0.5 * delay) << s.bytes << " bytes, " << sweeps << " sweeps";
    }
  }
}

TEST(BucketProbe, SameCurveAndSameChoiceOnEveryRank) {
  auto c = make_mpi_communicator(MPI_COMM_WORLD);
  const std::vector<int64_t> slices = slice_elements();
  int64_t total = 0;
  for (int64_t e : slices) total += e;
  for (DType wire : {DType::f32, DType::bf16}) {
    const auto elem = static_cast<int64_t>(dtype_size(wire));
    const std::vector<int64_t> sizes = probe_sizes(16 * 1024, total * elem, elem);
    ASSERT_GE(sizes.size(), 2u);
    EXPECT_EQ(sizes.back(), total * elem);
    std::vector<unsigned char> buffer(static_cast<size_t>(total * elem), 0);
    std::vector<AllreduceSample> curve = probe_allreduce(*c, buffer.data(), wire, sizes, ProbeOptions{1, 3});
    ASSERT_EQ(curve.size(), sizes.size());
    take_slowest_rank(*c, curve);
    for (size_t i = 0; i < curve.size(); ++i) {
      EXPECT_EQ(curve[i].bytes, sizes[i]);
      EXPECT_GT(curve[i].seconds, 0);
      for (double t : everyone(*c, curve[i].seconds)) EXPECT_EQ(t, curve[i].seconds) << "size " << sizes[i];
    }
    const AlphaBetaFit fit = fit_alpha_beta(curve);
    EXPECT_TRUE(std::isfinite(fit.alpha_s) && std::isfinite(fit.beta_s_per_byte) && std::isfinite(fit.rms_relative_error));

    BucketModelInputs in;
    in.slice_elements = slices;
    in.backward = profile(slices.size());
    in.wire_bytes_per_element = elem;
    const BucketChoice ch = choose_bucket_size(in, AllreduceCurve(curve), c->size());
    for (double mb : everyone(*c, ch.chosen.mb)) EXPECT_EQ(mb, ch.chosen.mb);
    for (int64_t n : everyone(*c, ch.chosen.buckets)) EXPECT_EQ(n, ch.chosen.buckets);
    if (c->size() == 1) {
      EXPECT_TRUE(ch.chosen.one_bucket);
      EXPECT_TRUE(ch.candidates.empty());
      continue;
    }
    bool listed = false;
    for (const BucketCandidate& k : ch.candidates)
      listed = listed || (k.one_bucket == ch.chosen.one_bucket && k.mb == ch.chosen.mb);
    EXPECT_TRUE(listed) << "chosen " << ch.chosen.mb << " MB is not a candidate";
    bool known = ch.chosen.one_bucket;
    for (double mb : default_bucket_candidates_mb()) known = known || mb == ch.chosen.mb;
    EXPECT_TRUE(known) << ch.chosen.mb << " MB";

    // The predicted bucket count is GradientBuckets' at that size.
    std::vector<float> grads(static_cast<size_t>(total));
    std::vector<GradientSlice> layout;
    int64_t off = 0;
    for (int64_t e : slices) {
      layout.push_back({off, e});
      off += e;
    }
    static std::unique_ptr<Backend> cpu = make_cpu_backend(1);
    const Tensor view = Tensor::adopt(grads.data(), grads.size() * sizeof(float), {total}, DType::f32, Device::cpu,
                                      "test.gradients", nullptr);
    const int64_t bytes = ch.chosen.one_bucket ? total * 4 : static_cast<int64_t>(ch.chosen.mb * kBytesPerMB);
    GradientBuckets gb(*c, *cpu, view, layout, bytes, CommProgress::test, wire);
    EXPECT_EQ(gb.bucket_count(), ch.chosen.buckets);
  }
}
