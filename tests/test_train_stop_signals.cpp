// Stop signals (train/stop_signals.hpp) while oneDNN's JIT GEMM runs: a stream of SIGUSR1 sent to
// the process leaves the GEMM's results and the heap intact, because no thread that computes ever
// runs a handler. A handler run on the computing thread pushes its frame where oneDNN's generated
// GEMM kernels point rsp: into the heap (uxlfoundation/oneDNN#4845); glibc then aborts on the
// corrupted heap, or a GEMM result differs.
#include <dnnl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/stop_signals.hpp"

namespace scaletrain::train {
namespace {

// Row-major C[m, n] = op(A) op(B), one of the shapes of a small network's dense layers.
struct Gemm {
  char trans_a, trans_b;
  int64_t m, n, k;
  std::vector<float> a, b, c;
  void run() {
    const int64_t lda = trans_a == 'N' ? k : m, ldb = trans_b == 'N' ? n : k;
    ASSERT_EQ(dnnl_sgemm(trans_a, trans_b, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n),
              dnnl_success);
  }
};

std::vector<Gemm> dense_layer_gemms() {
  std::vector<Gemm> g = {{'N', 'T', 128, 84, 120, {}, {}, {}},  {'N', 'N', 128, 256, 120, {}, {}, {}},
                         {'T', 'N', 120, 256, 128, {}, {}, {}}, {'T', 'N', 84, 120, 128, {}, {}, {}},
                         {'T', 'N', 10, 84, 128, {}, {}, {}}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (Gemm& x : g) {
    x.a.resize(static_cast<size_t>(x.m * x.k));
    x.b.resize(static_cast<size_t>(x.k * x.n));
    x.c.resize(static_cast<size_t>(x.m * x.n));
    for (float& v : x.a) v = u(rng);
    for (float& v : x.b) v = u(rng);
  }
  return g;
}

TEST(StopSignals, AreBlockedInTheCallingThreadOnceInstalled) {
  install_stop_signal_handlers();
  sigset_t now;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &now), 0);
  for (int s : {SIGUSR1, SIGTERM, SIGINT}) EXPECT_TRUE(sigismember(&now, s)) << signal_name(s);
}

TEST(StopSignals, SentWhileOneDnnGemmRunsLeaveItsResultsAndTheHeapIntact) {
  install_stop_signal_handlers();
  clear_stop_signal();
  std::vector<Gemm> gemms = dense_layer_gemms();
  std::vector<std::vector<float>> expected;
  for (Gemm& g : gemms) {
    g.run();
    expected.push_back(g.c);
  }
  std::atomic<bool> done{false};
  std::atomic<int64_t> sent{0};
  std::thread sender([&] {
    while (!done.load()) {
      ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
      sent.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  int64_t mismatches = 0, runs = 0;
  const double end = now_seconds() + 1.5;
  while (now_seconds() < end) {
    for (size_t i = 0; i < gemms.size(); ++i) {
      gemms[i].run();
      if (std::memcmp(gemms[i].c.data(), expected[i].data(), expected[i].size() * sizeof(float)) != 0) ++mismatches;
      ++runs;
      std::free(std::malloc(4096 + static_cast<size_t>(runs % 7) * 1000));  // glibc checks the heap here
    }
  }
  done = true;
  sender.join();
  EXPECT_EQ(mismatches, 0) << "of " << runs << " GEMMs";
  EXPECT_GT(sent.load(), 1000);
  EXPECT_EQ(received_stop_signal(), SIGUSR1);
  clear_stop_signal();
}

}  // namespace
}  // namespace scaletrain::train
