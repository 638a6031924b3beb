// make_nccl_communicator in a build without CUDA: a clear error (the cuda build defines it in
// src/comm/nccl/nccl_communicator.cpp).
#include "scaletrain/comm/nccl_communicator.hpp"

#include "scaletrain/core/error.hpp"

namespace scaletrain::comm {

#if !SCALETRAIN_HAVE_CUDA
std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, Backend&) {
  ST_FAIL("comm.backend = nccl on run.device = cuda: this build has no NCCL (configure with the cuda preset, "
          "or -DSCALETRAIN_ENABLE_CUDA=ON); use comm.backend = mpi");
}
#endif

}  // namespace scaletrain::comm
