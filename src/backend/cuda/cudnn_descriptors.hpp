// Private to backend/cuda: owning wrappers of cuDNN's legacy descriptors (tensor, filter,
// convolution, pooling, activation) set from the pure plan (backend/cudnn_plan.hpp), and the translations
// between the plan's small enums and cuDNN's.
#pragma once
#include <cudnn.h>

#include <string>

#include "scaletrain/backend/cudnn_plan.hpp"
#include "scaletrain/core/check_cuda.hpp"

// ST_CUDNN_CHECK for an operator's calls: the error names the cuDNN function and the operator's
// shape (`who`, a string), e.g. "cudnnConvolutionForward for conv{...} failed: CUDNN_STATUS_...".
#define ST_CUDNN_CHECK_FOR(who, call)                                                                                  \
  do {                                                                                                                 \
    cudnnStatus_t st_cudnn_rc_ = (call);                                                                               \
    if (st_cudnn_rc_ != CUDNN_STATUS_SUCCESS) [[unlikely]] {                                                           \
      const std::string st_call_(#call);                                                                               \
      ::scaletrain::throw_error(                                                                                       \
          __FILE__, __LINE__, "cuDNN",                                                                                 \
          st_call_.substr(0, st_call_.find('(')) + " for " + (who) + " failed: " + cudnnGetErrorString(st_cudnn_rc_)); \
    }                                                                                                                  \
  } while (0)

namespace scaletrain::cuda {

inline cudnnDataType_t to_cudnn(CudnnType t) {
  switch (t) {
    case CudnnType::f32:
      return CUDNN_DATA_FLOAT;
    case CudnnType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case CudnnType::f16:
      return CUDNN_DATA_HALF;
  }
  return CUDNN_DATA_FLOAT;
}

inline cudnnMathType_t to_cudnn(CudnnMath m) {
  switch (m) {
    case CudnnMath::fma:
      return CUDNN_FMA_MATH;
    case CudnnMath::default_math:
      return CUDNN_DEFAULT_MATH;
    case CudnnMath::tensor_op:
      return CUDNN_TENSOR_OP_MATH;
    case CudnnMath::tensor_op_allow_conversion:
      return CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  }
  return CUDNN_FMA_MATH;
}

inline CudnnMath from_cudnn(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_FMA_MATH:
      return CudnnMath::fma;
    case CUDNN_DEFAULT_MATH:
      return CudnnMath::default_math;
    case CUDNN_TENSOR_OP_MATH:
      return CudnnMath::tensor_op;
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return CudnnMath::tensor_op_allow_conversion;
  }
  return CudnnMath::tensor_op_allow_conversion;  // unknown: treated as the least allowed
}

inline cudnnPoolingMode_t to_cudnn(CudnnPoolMode m) {
  switch (m) {
    case CudnnPoolMode::max:
      return CUDNN_POOLING_MAX;
    case CudnnPoolMode::max_deterministic:
      return CUDNN_POOLING_MAX_DETERMINISTIC;
    case CudnnPoolMode::average_exclude_padding:
      return CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    case CudnnPoolMode::average_include_padding:
      return CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  }
  return CUDNN_POOLING_MAX;
}

class TensorDescriptor {
 public:
  TensorDescriptor(const CudnnTensor4d& t, CudnnType type) {
    ST_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_));
    try {
      ST_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(d_, to_cudnn(type), static_cast<int>(t.n), static_cast<int>(t.c),
                                                  static_cast<int>(t.h), static_cast<int>(t.w),
                                                  static_cast<int>(t.n_stride), static_cast<int>(t.c_stride),
                                                  static_cast<int>(t.h_stride), static_cast<int>(t.w_stride)));
    } catch (...) {
      cudnnDestroyTensorDescriptor(d_);
      throw;
    }
  }
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(d_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

// The plan's filter: [k, c, h, w] in CUDNN_TENSOR_NHWC, i.e. OHWI in memory.
class FilterDescriptor {
 public:
  explicit FilterDescriptor(const CudnnConvPlan& p) {
    ST_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_));
    try {
      ST_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d_, to_cudnn(p.data_type), CUDNN_TENSOR_NHWC,
                                                static_cast<int>(p.filter_k), static_cast<int>(p.filter_c),
                                                static_cast<int>(p.filter_h), static_cast<int>(p.filter_w)));
    } catch (...) {
      cudnnDestroyFilterDescriptor(d_);
      throw;
    }
  }
  ~FilterDescriptor() { cudnnDestroyFilterDescriptor(d_); }
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

// The plan's convolution (symmetric pads, strides, dilation 1, cross-correlation, f32 compute,
// groups) with the math type `math`.
class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor(const CudnnConvPlan& p, CudnnMath math) {
    ST_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_));
    try {
      ST_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d_, static_cast<int>(p.pad_h), static_cast<int>(p.pad_w),
                                                     static_cast<int>(p.stride_h), static_cast<int>(p.stride_w),
                                                     static_cast<int>(p.dilation_h), static_cast<int>(p.dilation_w),
                                                     CUDNN_CROSS_CORRELATION, to_cudnn(p.compute_type)));
      ST_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d_, static_cast<int>(p.groups)));
      ST_CUDNN_CHECK(cudnnSetConvolutionMathType(d_, to_cudnn(math)));
    } catch (...) {
      cudnnDestroyConvolutionDescriptor(d_);
      throw;
    }
  }
  ~ConvolutionDescriptor() { cudnnDestroyConvolutionDescriptor(d_); }
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

class PoolingDescriptor {
 public:
  explicit PoolingDescriptor(const CudnnPoolPlan& p) {
    ST_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d_));
    try {
      ST_CUDNN_CHECK(cudnnSetPooling2dDescriptor(d_, to_cudnn(p.mode), CUDNN_PROPAGATE_NAN,
                                                 static_cast<int>(p.window_h), static_cast<int>(p.window_w),
                                                 static_cast<int>(p.pad_h), static_cast<int>(p.pad_w),
                                                 static_cast<int>(p.stride_h), static_cast<int>(p.stride_w)));
    } catch (...) {
      cudnnDestroyPoolingDescriptor(d_);
      throw;
    }
  }
  ~PoolingDescriptor() { cudnnDestroyPoolingDescriptor(d_); }
  PoolingDescriptor(const PoolingDescriptor&) = delete;
  PoolingDescriptor& operator=(const PoolingDescriptor&) = delete;
  cudnnPoolingDescriptor_t get() const { return d_; }

 private:
  cudnnPoolingDescriptor_t d_ = nullptr;
};

// An activation with NaN propagated (the convolution's fused forward: ReLU or the identity).
class ActivationDescriptor {
 public:
  explicit ActivationDescriptor(cudnnActivationMode_t mode) {
    ST_CUDNN_CHECK(cudnnCreateActivationDescriptor(&d_));
    try {
      ST_CUDNN_CHECK(cudnnSetActivationDescriptor(d_, mode, CUDNN_PROPAGATE_NAN, 0.0));
    } catch (...) {
      cudnnDestroyActivationDescriptor(d_);
      throw;
    }
  }
  ~ActivationDescriptor() { cudnnDestroyActivationDescriptor(d_); }
  ActivationDescriptor(const ActivationDescriptor&) = delete;
  ActivationDescriptor& operator=(const ActivationDescriptor&) = delete;
  cudnnActivationDescriptor_t get() const { return d_; }

 private:
  cudnnActivationDescriptor_t d_ = nullptr;
};

}  // namespace scaletrain::cuda
