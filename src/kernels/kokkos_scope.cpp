// KokkosScope: initializes Kokkos once per process and finalizes it when the owner goes away.
#include "scaletrain/kernels/launch.hpp"

namespace scaletrain::kernels {

KokkosScope::KokkosScope() {
  if (!Kokkos::is_initialized()) {
    Kokkos::InitArguments args;
    args.disable_warnings = true;
    Kokkos::initialize(args);
    owns_ = true;
  }
}

KokkosScope::~KokkosScope() {
  if (owns_ && Kokkos::is_initialized()) Kokkos::finalize();
}

}  // namespace scaletrain::kernels
