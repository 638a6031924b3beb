// Check macros for the CUDA runtime, cuDNN, cuBLAS(Lt) and NCCL; each throws scaletrain::Error with
// the library's own error string. Only included by code compiled with SCALETRAIN_ENABLE_CUDA.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "scaletrain/core/error.hpp"

#define ST_CUDA_CHECK(call)                                                                        \
  do {                                                                                             \
    cudaError_t st_cu_rc_ = (call);                                                                \
    if (st_cu_rc_ != cudaSuccess) [[unlikely]]                                                     \
      ::scaletrain::throw_error(__FILE__, __LINE__, "CUDA",                                        \
                                std::string(#call) + " failed: " + cudaGetErrorString(st_cu_rc_)); \
  } while (0)

#define ST_CUDNN_CHECK(call)                                                                          \
  do {                                                                                                \
    cudnnStatus_t st_cudnn_rc_ = (call);                                                              \
    if (st_cudnn_rc_ != CUDNN_STATUS_SUCCESS) [[unlikely]]                                            \
      ::scaletrain::throw_error(__FILE__, __LINE__, "cuDNN",                                          \
                                std::string(#call) + " failed: " + cudnnGetErrorString(st_cudnn_rc_)); \
  } while (0)

#define ST_CUBLAS_CHECK(call)                                                                    \
  do {                                                                                           \
    cublasStatus_t st_cublas_rc_ = (call);                                                       \
    if (st_cublas_rc_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                     \
      ::scaletrain::throw_error(__FILE__, __LINE__, "cuBLAS",                                    \
                                std::string(#call) + " failed: status " +                        \
                                    std::to_string(static_cast<int>(st_cublas_rc_)));            \
  } while (0)

#define ST_NCCL_CHECK(call)                                                                          \
  do {                                                                                               \
    ncclResult_t st_nccl_rc_ = (call);                                                               \
    if (st_nccl_rc_ != ncclSuccess) [[unlikely]]                                                     \
      ::scaletrain::throw_error(__FILE__, __LINE__, "NCCL",                                          \
                                std::string(#call) + " failed: " + ncclGetErrorString(st_nccl_rc_)); \
  } while (0)
