// The pure host side of the CUDA backend's cuDNN convolution, pooling and batch normalization
// (backend/cuda/cudnn_conv.cpp, cudnn_pool.cpp, cudnn_batch_norm.cpp): what a shape becomes in cuDNN's descriptors (dims and strides, symmetric pads plus
// the explicit padding around them, filter layout, data/compute/math types, pooling mode), the key
// under which an algorithm choice is cached, and the policy that picks the algorithm from cuDNN's
// measured candidates. No cuDNN here (its own small enums), so the cpu build compiles and tests it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/backend/algorithm_book.hpp"
#include "scaletrain/backend/ops.hpp"
#include "scaletrain/kernels/conv_layout.hpp"
#include "scaletrain/kernels/pool_direct.hpp"

namespace scaletrain {

// cudnnDataType_t: CUDNN_DATA_FLOAT, CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF.
enum class CudnnType { f32, bf16, f16 };
// cudnnMathType_t: CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH,
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION.
enum class CudnnMath { fma, default_math, tensor_op, tensor_op_allow_conversion };
enum class ConvDirection { forward, backward_data, backward_filter };
// cudnnPoolingMode_t: CUDNN_POOLING_MAX, CUDNN_POOLING_MAX_DETERMINISTIC,
// CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING.
enum class CudnnPoolMode { max, max_deterministic, average_exclude_padding, average_include_padding };

std::string cudnn_type_name(CudnnType t);
std::string cudnn_math_name(CudnnMath m);
CudnnMath parse_cudnn_math(const std::string& name);  // Error for a name cudnn_math_name does not give
std::string conv_direction_name(ConvDirection d);  // "fwd", "bwd data", "bwd filter"

// A 4-d tensor as cudnnSetTensor4dDescriptorEx takes it: the logical NCHW dims and the strides of
// the NHWC layout in memory.
struct CudnnTensor4d {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t n_stride = 0, c_stride = 0, h_stride = 0, w_stride = 0;
  int64_t elements() const { return n * c * h * w; }
  std::string to_string() const;  // "[n, c, h, w] strides [.., .., .., ..]"
};
CudnnTensor4d nhwc_tensor(int64_t n, int64_t c, int64_t h, int64_t w);

// The padding a symmetric descriptor cannot express, added to the input explicitly (zeros) before
// cuDNN sees it; the gradient of the padded input is cropped back.
struct ExplicitPad {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
  bool any() const { return top || left || bottom || right; }
};

// The selection settings (CudaOpSettings, from run.deterministic, train.allow_tf32 and
// run.cudnn_workspace_mb; workspace_auto: the limit is the auto rule's figure at the choice).
struct CudnnSelection {
  bool deterministic = true;
  bool allow_tf32 = false;
  int64_t workspace_limit_bytes = int64_t{512} << 20;
  bool workspace_auto = false;
};

struct CudnnConvPlan {
  ConvShape shape;
  CudnnTensor4d x;       // the caller's input
  CudnnTensor4d x_conv;  // what cuDNN convolves: x, or x with the explicit padding around it
  CudnnTensor4d y;
  ExplicitPad explicit_pad;
  // The filter: cudnnSetFilter4dDescriptor(type, CUDNN_TENSOR_NHWC, k, c, h, w), i.e. OHWI in memory
  // (the op reorders our OIHW weights into a per-op buffer, and the OHWI weight gradient back).
  int64_t filter_k = 0, filter_c = 0, filter_h = 0, filter_w = 0;
  // cudnnSetConvolution2dDescriptor(pad_h, pad_w, stride_h, stride_w, 1, 1, CROSS_CORRELATION, compute)
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;  // cudnnSetConvolutionGroupCount
  CudnnType data_type = CudnnType::f32;
  CudnnType compute_type = CudnnType::f32;  // f32 accumulation in every dtype
  CudnnMath math = CudnnMath::fma;          // the math type the descriptor is created with
  // Per-op device buffers (bytes): the padded input and its gradient (0 without explicit padding),
  // and the OHWI filter, which also holds the OHWI weight gradient in the storage type.
  int64_t padded_bytes = 0;
  int64_t filter_bytes = 0;

  int64_t filter_elements() const { return filter_k * filter_c * filter_h * filter_w; }
  // The output size cuDNN computes from the descriptors (cudnnGetConvolution2dForwardOutputDim).
  int64_t cudnn_out_h() const { return (x_conv.h + 2 * pad_h - dilation_h * (filter_h - 1) - 1) / stride_h + 1; }
  int64_t cudnn_out_w() const { return (x_conv.w + 2 * pad_w - dilation_w * (filter_w - 1) - 1) / stride_w + 1; }
  kernels::NhwcPadGeometry pad_geometry() const;
  kernels::FilterGeometry filter_geometry() const;
};

// Throws Error naming the shape when it is impossible (as the CPU backend's conv does), when its
// dtype is not f32, bf16 or f16, or when a dim or stride does not fit cuDNN's int.
CudnnConvPlan plan_cudnn_conv(const ConvShape& shape, const CudnnSelection& selection);

// The math type a convolution descriptor starts with: f32 -> FMA (no TF32) unless TF32 is allowed
// (then DEFAULT, which lets cuDNN use TF32 tensor cores); bf16/f16 -> TENSOR_OP (tensor cores, f32
// accumulation, no down-conversion).
CudnnMath conv_math(CudnnType data, bool allow_tf32);
// Whether an algorithm that reports `math` may run for `data`: never a down-conversion
// (ALLOW_CONVERSION turns f32 or bf16 into f16); for f32 without TF32 only FMA.
bool conv_math_allowed(CudnnMath math, CudnnType data, bool allow_tf32);

struct CudnnPoolPlan {
  PoolShape shape;
  CudnnTensor4d x, y;
  // Asymmetric padding: the kernels/pool_direct.hpp functors instead of cuDNN (explicit padding
  // cells would count in an average's divisor; one path for max and average keeps it simple).
  bool direct = false;
  // cudnnSetPooling2dDescriptor(mode, PROPAGATE_NAN, window, pad, stride) when !direct: a NaN
  // input shows in the output, where the non-finite checks see it.
  CudnnPoolMode mode = CudnnPoolMode::max;
  int64_t window_h = 0, window_w = 0, pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  CudnnType data_type = CudnnType::f32;

  int64_t cudnn_out_h() const { return (x.h + 2 * pad_h - window_h) / stride_h + 1; }
  int64_t cudnn_out_w() const { return (x.w + 2 * pad_w - window_w) / stride_w + 1; }
  kernels::PoolGeometry geometry() const;
};

// Max pooling is CUDNN_POOLING_MAX_DETERMINISTIC when `deterministic` (overlapping windows then
// need no atomics in backward). Throws Error naming the shape when it is impossible.
CudnnPoolPlan plan_cudnn_pool(const PoolShape& shape, bool deterministic);

// "max_pool{...}: cuDNN MAX_DETERMINISTIC" or "...: direct kernels (asymmetric padding)".
std::string pool_choice_line(const CudnnPoolPlan& plan);

// BatchNorm2d in cuDNN's legacy spatial mode: x as NHWC [batch, channels, spatial, 1] (the rows
// normalized over are batch x spatial either way), the weight, bias and statistics as [1, C, 1, 1] in
// f32. cuDNN runs f32 and f16; bf16 stays on the layer's kernels (plan.cudnn false).
struct CudnnBatchNormPlan {
  BatchNormShape shape;
  CudnnTensor4d x, parameters;
  bool cudnn = false;
  CudnnType data_type = CudnnType::f32;
};
// Throws Error naming the shape when it is invalid or does not fit cuDNN's int dimensions. try_bf16:
// a bf16 shape goes to cuDNN too (the GPU kit's probe of whether it takes bf16).
CudnnBatchNormPlan plan_cudnn_batch_norm(const BatchNormShape& shape, bool try_bf16 = false);
// "batch_norm{...}: cuDNN SPATIAL, ReLU kernels after" or "...: scaletrain kernels (bf16)".
std::string batch_norm_choice_line(const CudnnBatchNormPlan& plan);

// The key of an algorithm choice (AlgorithmRecord::key): the problem (the shape without what cuDNN
// does not see, such as the bias), the direction and whether f32 may use TF32. Not the determinism
// or the workspace: a pinned record is checked against those (check_pinned_record). Identical
// layers share a choice.
struct CudnnChoiceKey {
  std::string text;
  bool operator==(const CudnnChoiceKey& o) const { return text == o.text; }
};
CudnnChoiceKey conv_choice_key(const ConvShape& shape, ConvDirection direction, const CudnnSelection& selection);

// One candidate from cudnnFind*Algorithm*: its perf result, translated.
struct CudnnAlgoResult {
  int algo = 0;
  std::string name;  // "IMPLICIT_PRECOMP_GEMM"
  bool ok = true;    // status == CUDNN_STATUS_SUCCESS
  std::string status;
  float time_ms = 0;
  // Candidates from cuDNN's heuristic (cudnnGet*_v7: ranked, not timed) carry their rank (0 = cuDNN's
  // first choice); timed candidates (cudnnFind*Ex) carry -1.
  int heuristic_rank = -1;
  int64_t workspace_bytes = 0;
  bool deterministic = true;
  CudnnMath math = CudnnMath::fma;
};

// The fastest candidate that ran, is deterministic when the selection asks for it, fits the workspace
// limit and uses an allowed math type; ties go to the smaller workspace, then to the lower
// algorithm id. Heuristic candidates (heuristic_rank >= 0, from cudnnGet*_v7, untimed) are taken in
// cuDNN's rank order instead (run.cudnn_algorithms = heuristic). When nothing is left, Error naming
// the shape, the direction and why each candidate was dropped.
CudnnAlgoResult choose_conv_algorithm(const std::vector<CudnnAlgoResult>& candidates, const ConvShape& shape,
                                      ConvDirection direction, const CudnnSelection& selection);
// As choose_conv_algorithm, but false instead of the Error (the heuristic's first choice beside a
// timed one, which may find none that fits).
bool find_conv_algorithm(const std::vector<CudnnAlgoResult>& candidates, const ConvShape& shape,
                         const CudnnSelection& selection, CudnnAlgoResult& out);

// The record of a choice: `timed` holds cudnnFind*'s candidates (empty when the choice is the
// heuristic's), `heuristic` cudnnGet*_v7's ranked ones; the heuristic's first allowed candidate goes
// beside the choice, with its time in the same search where it was timed.
AlgorithmRecord conv_record(const ConvShape& shape, ConvDirection direction, const CudnnSelection& selection,
                            const CudnnAlgoResult& choice, const std::vector<CudnnAlgoResult>& heuristic,
                            const std::vector<CudnnAlgoResult>& timed);
// What a pinned record runs: its algorithm id and math type.
CudnnAlgoResult conv_choice_of(const AlgorithmRecord& r);

}  // namespace scaletrain
