// Launching a kernels/ functor over an index range (or rows x packs). On the host the functor runs through
// Kokkos::parallel_for on the default host execution space (Serial in Debian's Kokkos, OpenMP on a
// cluster build); the CUDA backend launches the very same functor in a grid-stride loop.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace scaletrain::kernels {

// Runs f(i) for i in [0, n) on the host. The functor must be trivially copyable and take int64_t.
// A functor that runs as loops of its own on the host (run_on_host: kernels/optimizer_update.hpp's
// MultiTensorUpdate, one per parameter range; kernels/conv_layout.hpp's MasterFiltersToOhwi, one per
// filter) is handed the loop to run them with.
template <class F>
void launch_host(const char* label, int64_t n, const F& f) {
  if (n <= 0) return;
  if constexpr (requires { f.run_on_host([](int64_t, const auto&) {}); }) {
    f.run_on_host([label](int64_t count, const auto& g) { launch_host(label, count, g); });
    return;
  }
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<int64_t>>(0, n),
                       f);
}

// Runs f(r, p) for r in [0, rows) and p in [0, packs) on the host, a row's packs innermost: the
// element passes over [rows, C] data whose functors take a pack of channels each.
template <class F>
void launch_host_rows(const char* label, int64_t rows, int64_t packs, const F& f) {
  if (rows <= 0 || packs <= 0) return;
  Kokkos::parallel_for(label, Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::IndexType<int64_t>>(0, rows),
                       [f, packs](int64_t r) {
                         for (int64_t p = 0; p < packs; ++p) f(r, p);
                       });
}

// Kokkos must be initialized once per process; RAII guard used by apps and tests.
class KokkosScope {
 public:
  KokkosScope();
  ~KokkosScope();
  KokkosScope(const KokkosScope&) = delete;
  KokkosScope& operator=(const KokkosScope&) = delete;

 private:
  bool owns_ = false;
};

}  // namespace scaletrain::kernels
