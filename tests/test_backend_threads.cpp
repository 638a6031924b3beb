// The CPU backend uses exactly the cores this process is bound to (its affinity mask) unless a
// thread count is given, and says so in its description.
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>

#include "scaletrain/backend/backend.hpp"

namespace scaletrain {
namespace {

int affinity_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  return CPU_COUNT(&set);
}

TEST(BackendThreads, DefaultIsTheAffinityMask) {
  auto backend = make_cpu_backend(0);
  EXPECT_EQ(backend->device(), Device::cpu);
  EXPECT_EQ(backend->num_threads(), affinity_count());
  EXPECT_EQ(omp_get_max_threads(), affinity_count());
}

TEST(BackendThreads, NarrowedAffinityMaskIsFollowed) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int threads = make_cpu_backend(0)->num_threads();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(threads, 1);
}

TEST(BackendThreads, ExplicitCountWins) {
  auto backend = make_cpu_backend(3);
  EXPECT_EQ(backend->num_threads(), 3);
  EXPECT_EQ(omp_get_max_threads(), 3);
  make_cpu_backend(0);  // restore the default for other tests
}

TEST(BackendThreads, DescriptionNamesLibraryThreadsAndIsa) {
  auto backend = make_cpu_backend(2);
  const std::string d = backend->description();
  EXPECT_EQ(d.rfind("cpu (oneDNN ", 0), 0u) << d;
  EXPECT_NE(d.find(", 2 threads, ISA "), std::string::npos) << d;
  EXPECT_EQ(d.find("unknown"), std::string::npos) << d;
  make_cpu_backend(0);
}

TEST(BackendThreads, NegativeCountThrows) { EXPECT_THROW(make_cpu_backend(-1), Error); }

}  // namespace
}  // namespace scaletrain
