// A bucket exchange written in this one file, plugged into GradientBuckets through its factory
// argument: each ready bucket is copied to a pinned host buffer, summed there with the
// communicator's blocking all-reduce (MPI_Allreduce), and copied back at the end of the step. It
// passes the cases every exchange must pass (support/gradient_bucket_cases.hpp), in both progress
// modes, on the cpu backend and on the simulated device.
#include "support/gradient_bucket_cases.hpp"

using namespace scaletrain;
using namespace scaletrain::bucket_cases;

namespace {

// A request that is complete when it is made: the all-reduce behind it was blocking.
class CompletedRequest final : public comm::Request {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class ToyExchange final : public comm::BucketExchange {
 public:
  explicit ToyExchange(const comm::BucketLayout& layout) : layout_(layout) {
    const Tensor& t = layout_.reduced;
    host_ = layout_.backend.pinned(t.shape(), t.dtype(), "toy exchange host copy");
    for (size_t b = 0; b < layout_.buckets.size(); ++b)
      copied_.push_back(layout_.backend.make_event("toy bucket copied " + std::to_string(b)));
  }
  ~ToyExchange() override { layout_.backend.comm_stream().synchronize(); }
  std::string name() const override { return "toy"; }

  void bucket_ready(size_t b, Event& ready) override {
    Stream& s = layout_.backend.comm_stream();
    s.wait(ready);
    layout_.backend.copy_async(s, span(host_, b), span(layout_.reduced, b));
    s.record(*copied_[b]);
  }
  Event& start_after(size_t b, Event& /*ready*/) override { return *copied_[b]; }
  std::unique_ptr<comm::Request> start(size_t b, Event& /*ready*/) override {
    const comm::BucketSpan& k = layout_.buckets[b];
    layout_.comm.allreduce(span(host_, b).device_raw(), k.count, host_.dtype(), comm::ReduceOp::sum);
    return std::make_unique<CompletedRequest>();
  }
  void end_step() override {
    for (size_t b = 0; b < layout_.buckets.size(); ++b)
      layout_.backend.copy_async(layout_.backend.compute_stream(), span(layout_.reduced, b), span(host_, b));
  }

 private:
  Tensor span(const Tensor& t, size_t b) const {
    const comm::BucketSpan& k = layout_.buckets[b];
    return t.view(k.offset, {k.count});
  }
  comm::BucketLayout layout_;
  Tensor host_;
  std::vector<std::unique_ptr<Event>> copied_;
};

std::unique_ptr<comm::BucketExchange> make_toy(const comm::BucketLayout& layout) {
  return std::make_unique<ToyExchange>(layout);
}

INSTANTIATE_TEST_SUITE_P(Toy, BucketsTest,
                         ::testing::Values(Mode{"thread", "cpu", make_toy}, Mode{"test", "cpu", make_toy},
                                           Mode{"thread", "sim", make_toy}, Mode{"test", "sim", make_toy}),
                         mode_name);

TEST(ToyBucketExchange, GradientBucketsUsesTheExchangeItIsGiven) {
  auto c = comm::make_mpi_communicator(MPI_COMM_WORLD);
  std::vector<float> g(10, 1.0f);
  GradientBuckets b(*c, cpu(), host_view(g), {{0, 4}, {4, 6}}, 1024, comm::CommProgress::test, DType::f32, false,
                    make_toy);
  EXPECT_EQ(b.exchange().name(), "toy");
}

}  // namespace
