// comm.bucket_mb = auto's pure parts: the setting's parsing ("auto", numbers, bad values rejected
// with a message naming the key and value), the bucket layout rule, the interpolated all-reduce
// curve, the alpha-beta fit, and the choice on synthetic curves and backward profiles.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "scaletrain/comm/allreduce_probe.hpp"
#include "scaletrain/comm/bucket_size_choice.hpp"
#include "scaletrain/core/error.hpp"

using namespace scaletrain;
using namespace scaletrain::comm;

namespace {

constexpr int64_t kMB = 1024 * 1024;

// A curve sampled at powers of two from 16 KB to 32 MB from a function of bytes.
template <class F>
AllreduceCurve curve_of(F seconds) {
  std::vector<AllreduceSample> s;
  for (int64_t b = 16 * 1024; b <= 32 * kMB; b *= 2) s.push_back({b, seconds(static_cast<double>(b))});
  return AllreduceCurve(s);
}

// `layers` layers, each one slice of `mb_each` f32 MB, ready every `layer_ms`; backward ends with
// the last one plus `tail_ms`.
BucketModelInputs even_model(int layers, double mb_each, double layer_ms, double tail_ms = 0) {
  BucketModelInputs in;
  for (int l = 0; l < layers; ++l) {
    in.slice_elements.push_back(static_cast<int64_t>(mb_each * kMB / 4));
    in.backward.layer_ready_s.push_back((l + 1) * layer_ms * 1e-3);
    in.backward.layer_slices.push_back(1);
  }
  in.backward.end_s = (layers * layer_ms + tail_ms) * 1e-3;
  return in;
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_bucket_size_setting(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(BucketSizeSetting, ParsesAutoAndPositiveNumbers) {
  EXPECT_TRUE(parse_bucket_size_setting("auto").automatic);
  EXPECT_TRUE(parse_bucket_size_setting("\"auto\"").automatic);  // TOML string
  const BucketSizeSetting four = parse_bucket_size_setting("4");
  EXPECT_FALSE(four.automatic);
  EXPECT_DOUBLE_EQ(four.fixed_mb, 4.0);
  EXPECT_DOUBLE_EQ(parse_bucket_size_setting("0.25").fixed_mb, 0.25);
  EXPECT_EQ(bucket_size_setting_text(BucketSizeSetting{}), "auto");
  EXPECT_EQ(bucket_size_setting_text(BucketSizeSetting::fixed(4)), "4.0");
  EXPECT_EQ(bucket_size_setting_text(BucketSizeSetting::fixed(0.05)), "0.05");
  EXPECT_TRUE(BucketSizeSetting{}.automatic) << "auto is the default";
}

TEST(BucketSizeSetting, RejectsBadValuesNamingKeyAndValue) {
  for (const std::string bad : {"fast", "0", "-1", "", "4MB", "nan", "inf", "Auto"}) {
    const std::string msg = error_of(bad);
    EXPECT_NE(msg.find("comm.bucket_mb = '" + bad + "' is neither auto nor a positive size in MB"), std::string::npos)
        << "value '" << bad << "': " << msg;
  }
}

TEST(BucketLayout, NewBucketWhenTheNextSliceWouldOverflow) {
  using V = std::vector<size_t>;
  EXPECT_EQ(bucket_slice_counts({10, 10, 10}, 80), (V{2, 1}));   // 80 bytes = 20 f32
  EXPECT_EQ(bucket_slice_counts({10, 10, 10}, 1000), (V{3}));
  EXPECT_EQ(bucket_slice_counts({100, 1, 1}, 8), (V{1, 2}));     // an oversize slice has its own bucket
  EXPECT_EQ(bucket_slice_counts({}, 8), V{});
}

TEST(AllreduceCurve, InterpolatesBetweenProbedSizes) {
  const AllreduceCurve c({{2000, 3e-5}, {1000, 1e-5}});  // unsorted on purpose
  EXPECT_DOUBLE_EQ(c.seconds(1500), 2e-5);
  EXPECT_DOUBLE_EQ(c.seconds(10), 1e-5);     // below: the smallest's latency
  EXPECT_DOUBLE_EQ(c.seconds(4000), 6e-5);   // above: the largest's time per byte
  EXPECT_THROW(AllreduceCurve({}), Error);
  EXPECT_THROW(AllreduceCurve({{1000, 0.0}}), Error);
  const AllreduceCurve p({{1000, 1e-5, 2}, {2000, 3e-5, 4}, {4000, 5e-5, 0}});
  EXPECT_EQ(p.polls(500), 2);
  EXPECT_EQ(p.polls(1500), 4);   // the next probed size up
  EXPECT_EQ(p.polls(3000), 1);   // not counted there: at least one
  EXPECT_EQ(p.polls(9000), 1);
}

TEST(AlphaBetaFit, RecoversALinearCurve) {
  std::vector<AllreduceSample> s;
  for (int64_t b = 1024; b <= 64 * kMB; b *= 4) s.push_back({b, 20e-6 + static_cast<double>(b) * 0.25e-9});
  const AlphaBetaFit f = fit_alpha_beta(s);
  EXPECT_NEAR(f.alpha_s, 20e-6, 1e-9);
  EXPECT_NEAR(f.beta_s_per_byte, 0.25e-9, 1e-14);
  EXPECT_LT(f.rms_relative_error, 1e-9);
  EXPECT_THROW(fit_alpha_beta({{1024, 1e-5}}), Error);
}

TEST(BucketModel, ExposedTimeByHand) {
  // Two 1 MB gradients ready at 1.0 and 1.2 ms (the polls); backward ends at 3.0 ms; 0.5 ms per MB.
  BucketModelInputs in;
  in.slice_elements = {kMB / 4, kMB / 4};
  in.backward.layer_ready_s = {1.0e-3, 1.2e-3};
  in.backward.layer_slices = {1, 1};
  in.backward.end_s = 3.0e-3;
  const AllreduceCurve c({{kMB, 0.5e-3}, {2 * kMB, 1.0e-3}});
  // A communication thread: b0 1.0-1.5, b1 1.5-2.0; one bucket 1.2-2.2: all hidden.
  in.completion_at_polls = false;
  EXPECT_NEAR(predicted_exposed_seconds(in, c, kMB), 0.0, 1e-12);
  EXPECT_NEAR(predicted_exposed_seconds(in, c, 2 * kMB), 0.0, 1e-12);
  // MPI_Test polls (one needed where the probe counted none): no poll 0.5 ms after either start, so
  // both are finished in wait_all(): 1 ms exposed; one bucket likewise.
  in.completion_at_polls = true;
  EXPECT_NEAR(predicted_exposed_seconds(in, c, kMB), 1.0e-3, 1e-12);
  EXPECT_NEAR(predicted_exposed_seconds(in, c, 2 * kMB), 1.0e-3, 1e-12);
  // A poll at 2.0 ms (a layer without parameters) completes both (in flight together): nothing exposed.
  in.backward.layer_ready_s = {1.0e-3, 1.2e-3, 2.0e-3};
  in.backward.layer_slices = {1, 1, 0};
  EXPECT_NEAR(predicted_exposed_seconds(in, c, kMB), 0.0, 1e-12);
  // With 3 polls needed (probed) and one more poll at 2.5 ms: b0 completes there (polls 1.2, 2.0,
  // 2.5); b1 got 2 of its 3 (2.0, 2.5), so wait_all() takes a third of its 0.5 ms.
  const AllreduceCurve c3({{kMB, 0.5e-3, 3}, {2 * kMB, 1.0e-3, 3}});
  in.backward.layer_ready_s = {1.0e-3, 1.2e-3, 2.0e-3, 2.5e-3};
  in.backward.layer_slices = {1, 1, 0, 0};
  EXPECT_NEAR(predicted_exposed_seconds(in, c3, kMB), 0.5e-3 / 3, 1e-12);
  // Backward ending at the last gradient: one bucket is exposed for all of its 1 ms in both modes.
  in.backward.layer_ready_s = {1.0e-3, 1.2e-3};
  in.backward.layer_slices = {1, 1};
  in.backward.end_s = 1.2e-3;
  for (bool polls : {false, true}) {
    in.completion_at_polls = polls;
    EXPECT_NEAR(predicted_exposed_seconds(in, c, 2 * kMB), 1.0e-3, 1e-12) << "polls " << polls;
  }
}

TEST(BucketChoice, LargePerCallLatencyPicksOneBucket) {
  const AllreduceCurve c = curve_of([](double b) { return 5e-3 + b * 0.1e-9; });  // 5 ms per call
  const BucketModelInputs in = even_model(24, 0.5, 0.1);  // 12 MB over 2.4 ms of backward
  const BucketChoice ch = choose_bucket_size(in, c, 2);
  EXPECT_TRUE(ch.chosen.one_bucket);
  EXPECT_EQ(ch.chosen.buckets, 1);
}

TEST(BucketChoice, BandwidthCollapseForLargeMessagesPicksSmallBuckets) {
  // 8 GB/s up to 2 MB, 1.5 GB/s above (as MPI over shared memory measured here).
  const AllreduceCurve c = curve_of([](double b) { return 5e-6 + b / (b <= 2.0 * kMB ? 8e9 : 1.5e9); });
  const BucketModelInputs in = even_model(24, 0.5, 1.0);
  for (bool polls : {false, true}) {
    BucketModelInputs m = in;
    m.completion_at_polls = polls;
    const BucketChoice ch = choose_bucket_size(m, c, 2);
    EXPECT_FALSE(ch.chosen.one_bucket) << "polls " << polls;
    EXPECT_LE(ch.chosen.mb, 2.0) << "polls " << polls;
    double one = 0;
    for (const BucketCandidate& k : ch.candidates)
      if (k.one_bucket) one = k.predicted_exposed_s;
    EXPECT_LT(ch.chosen.predicted_exposed_s, one / 4) << "polls " << polls;
  }
}

TEST(BucketChoice, CandidatesAtOrAboveTheGradientAreOneBucketWhichWinsWithoutOverlap) {
  const AllreduceCurve c = curve_of([](double b) { return 5e-6 + b / 8e9; });
  // Everything ready at once (no overlap possible): more calls only add latency.
  BucketModelInputs in = even_model(4, 0.5, 0.0);
  in.backward.layer_ready_s.assign(4, 0.0);
  const BucketChoice ch = choose_bucket_size(in, c, 2);
  EXPECT_TRUE(ch.chosen.one_bucket);
  int ones = 0;
  for (const BucketCandidate& k : ch.candidates) {
    ones += k.one_bucket ? 1 : 0;
    EXPECT_LT(k.one_bucket ? 0.0 : k.mb, 2.0) << "a candidate of 2 MB or more is one bucket of this 2 MB gradient";
  }
  EXPECT_EQ(ones, 1);
}

TEST(BucketChoice, OneRankIsOneBucketWithoutCandidates) {
  const AllreduceCurve c = curve_of([](double b) { return 5e-6 + b / (b <= 2.0 * kMB ? 8e9 : 1.5e9); });
  const BucketChoice ch = choose_bucket_size(even_model(24, 0.5, 1.0), c, 1);
  EXPECT_TRUE(ch.chosen.one_bucket);
  EXPECT_EQ(ch.chosen.buckets, 1);
  EXPECT_TRUE(ch.candidates.empty());
}

TEST(BucketModel, RejectsAProfileThatDoesNotMatchTheSlices) {
  BucketModelInputs in = even_model(3, 1.0, 1.0);
  in.slice_elements.push_back(7);
  const AllreduceCurve c({{kMB, 1e-4}});
  EXPECT_THROW(predicted_exposed_seconds(in, c, kMB), Error);
}

TEST(ProbeSizes, PowersOfTwoThenTheTotalInWholeElements) {
  EXPECT_EQ(probe_sizes(16384, 100000, 4), (std::vector<int64_t>{16384, 32768, 65536, 100000}));
  EXPECT_EQ(probe_sizes(16384, 16384, 2), (std::vector<int64_t>{16384}));
  EXPECT_EQ(probe_sizes(16384, 65538, 4), (std::vector<int64_t>{16384, 32768, 65536}));  // 65538 -> 65536
}

TEST(BucketChoice, NearTiesGoToTheLargerBucket) {
  // A flat curve (latency only) and everything ready at once: 0.25 MB buckets (8 calls) against one
  // bucket, with candidates 0.25 and 0.5 whose predictions differ by less than 5 us from each other.
  const AllreduceCurve c({{1024, 1e-7}, {64 * kMB, 1e-7}});
  BucketModelInputs in = even_model(8, 0.25, 0.0);
  const BucketChoice ch = choose_bucket_size(in, c, 2, {0.25, 0.5});
  ASSERT_EQ(ch.candidates.size(), 3u);
  EXPECT_TRUE(ch.chosen.one_bucket) << "8 x 0.1 us vs 4 x 0.1 us vs 0.1 us: all within 5 us, the largest wins";
}
