// The libraries the cuda build links, asked for their versions at run time and checked against the
// headers it was compiled with: CUDA runtime, cuDNN, NCCL, cuBLASLt. None of these calls needs a
// GPU, so this test runs (and must pass) on a machine without one.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <string>

#include "scaletrain/backend/cuda/cuda_device.hpp"

namespace {

TEST(CudaLibraries, RuntimeIsTheHeadersVersion) {
  int v = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  EXPECT_EQ(v, CUDART_VERSION);
  EXPECT_EQ(v / 1000, 13) << "the cuda build targets CUDA 13";
}

TEST(CudnnLibrary, IsTheHeadersVersion) {
  EXPECT_EQ(cudnnGetVersion(), static_cast<size_t>(CUDNN_VERSION));
  EXPECT_EQ(CUDNN_MAJOR, 9);
}

TEST(NcclLibrary, IsTheHeadersVersion) {
  int v = 0;
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EXPECT_EQ(v, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
}

TEST(CublasLtLibrary, IsTheHeadersVersion) {
  EXPECT_EQ(cublasLtGetVersion(), static_cast<size_t>(CUBLAS_VERSION));
  EXPECT_EQ(CUBLAS_VER_MAJOR, 13);
}

// The start-up table's version part, from the same calls.
TEST(CudaLibraries, StartupLineNamesEveryVersion) {
  const std::string line = scaletrain::cuda::library_versions();
  const std::string cudnn = std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." +
                            std::to_string(CUDNN_PATCHLEVEL);
  const std::string nccl = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                           std::to_string(NCCL_PATCH);
  const std::string runtime = std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  EXPECT_EQ(line.rfind("CUDA runtime " + runtime + " / driver ", 0), 0u) << line;
  const std::string cublas = std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) + "." +
                             std::to_string(CUBLAS_VER_PATCH);
  EXPECT_NE(line.find(", cuDNN " + cudnn + ", NCCL " + nccl + ", cuBLAS " + cublas), std::string::npos) << line;
}

}  // namespace
