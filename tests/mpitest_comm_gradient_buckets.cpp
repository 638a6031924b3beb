// GradientBuckets at any rank count with the built-in exchanges: the shared cases
// (support/gradient_bucket_cases.hpp) in both progress modes on the cpu backend and on the simulated
// device, the layout, and the errors a training loop can make.
#include "support/gradient_bucket_cases.hpp"

using namespace scaletrain;
using namespace scaletrain::bucket_cases;

namespace {

INSTANTIATE_TEST_SUITE_P(Progress, BucketsTest,
                         ::testing::Values(Mode{"thread", "cpu"}, Mode{"test", "cpu"}, Mode{"thread", "sim"},
                                           Mode{"test", "sim"}),
                         mode_name);

TEST(GradientBuckets, LayoutFollowsBucketBytes) {
  auto c = comm::make_mpi_communicator(MPI_COMM_WORLD);
  std::vector<float> g(100);
  // 4-byte floats; bucket of 40 bytes = 10 elements: {4, 6} | {5, 5} | {11} | {1}
  GradientBuckets b(*c, cpu(), host_view(g), {{0, 4}, {4, 6}, {10, 5}, {15, 5}, {20, 11}, {31, 1}}, 40,
                    comm::CommProgress::test);
  ASSERT_EQ(b.bucket_count(), 4);
  EXPECT_EQ(b.bucket_offset(0), 0);
  EXPECT_EQ(b.bucket_elements(0), 10);
  EXPECT_EQ(b.bucket_offset(1), 10);
  EXPECT_EQ(b.bucket_elements(1), 10);
  EXPECT_EQ(b.bucket_offset(2), 20);
  EXPECT_EQ(b.bucket_elements(2), 11);
  EXPECT_EQ(b.bucket_offset(3), 31);
  EXPECT_EQ(b.bucket_elements(3), 1);
}

TEST(GradientBuckets, RejectsBadConfigurationWithClearMessages) {
  auto c = comm::make_mpi_communicator(MPI_COMM_WORLD);
  std::vector<float> g(100);
  auto message = [&](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const auto test = comm::CommProgress::test;
  EXPECT_NE(message([&] { GradientBuckets b(*c, cpu(), host_view(g), {{0, 4}, {5, 6}}, 1024, test); }).find("contiguous"),
            std::string::npos);
  EXPECT_NE(message([&] { comm::parse_comm_progress("mpi_test"); }).find("'mpi_test'"), std::string::npos);
  EXPECT_NE(message([&] { GradientBuckets b(*c, cpu(), host_view(g), {{0, 4}}, 0, test); }).find("bucket_bytes"),
            std::string::npos);
  EXPECT_NE(message([&] { GradientBuckets b(*c, cpu(), host_view(g), {{0, 4}, {4, 200}}, 1024, test); }).find("past the"),
            std::string::npos);
}

TEST(GradientBuckets, MisuseWithinAStepIsReported) {
  auto c = comm::make_mpi_communicator(MPI_COMM_WORLD);
  for (const auto mode : {comm::CommProgress::thread, comm::CommProgress::test}) {
    std::vector<float> g(10, 1.0f);
    GradientBuckets b(*c, cpu(), host_view(g), {{0, 4}, {4, 6}}, 1024, mode);
    EXPECT_THROW(b.mark_ready(0), Error) << "mark_ready before begin_step";
    b.begin_step(0);
    b.mark_ready(1);
    EXPECT_THROW(b.mark_ready(1), Error) << "slice marked twice";
    EXPECT_THROW(b.mark_ready(2), Error) << "slice out of range";
    try {
      b.wait_all();
      ADD_FAILURE() << "wait_all with slice 0 not ready did not throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("1 of 2 gradients were never marked ready"), std::string::npos) << e.what();
    }
    b.mark_ready(0);  // now the only bucket starts on every rank
    b.wait_all();
    EXPECT_EQ(g[0], 1.0f);  // the mean of equal values
    EXPECT_THROW(b.wait_all(), Error) << "wait_all twice";
  }
}

}  // namespace
