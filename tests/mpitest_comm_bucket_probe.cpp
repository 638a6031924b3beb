// comm.bucket_mb = auto on the real MPI communicator, at any rank count: the probe's curve is the
// same on every rank (the slowest rank's times), its alpha-beta fit is finite, the choice from it is
// identical on every rank and one of the candidates, and its predicted bucket count is what
// GradientBuckets builds at that size.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
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

}  // namespace

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
