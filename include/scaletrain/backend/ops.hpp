// Shapes of the heavy operators (convolution, inner product, pooling, batch normalization) and their
// op interfaces.
// An op is created once per shape by a Backend, bound to one of its streams, and reused every step:
// nothing is allocated inside forward or backward. Each call is queued on the op's stream (on the
// CPU backend it runs at once). Activations are NHWC; weights are in PyTorch's layout (conv OIHW with
// I = C_in / groups, linear [out, in]) and a backend may reorder them internally, or, for a
// convolution, take them in its own layout once asked to (ConvOp::take_filters_in).
//
// Precision: a shape's dtype (f32, bf16, f16) is the storage type of the activations, their
// gradients and the weights an op reads (x, y, w, dy, dx: `void*` of that type). Biases, weight
// gradients and bias gradients are always f32 (the master weights' type), so mixed precision
// needs no gradient cast. Accumulation is f32 in every backend. A backend that has no kernels for
// a type computes in f32 on that storage (see Backend::precision_support).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/core/dtype.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain {

// What runs an op, as its backend names it for the start-up table and run.json (the CPU backend:
// the candidate its operator table chose, "narrow rows (direct)"); empty where the backend does not
// say. Every op interface below carries one.
class OpImplementation {
 public:
  const std::string& implementation() const { return implementation_; }
  void set_implementation(std::string name) { implementation_ = std::move(name); }

 private:
  std::string implementation_;
};

struct ConvShape {
  int64_t batch = 0;
  int64_t in_h = 0, in_w = 0, in_c = 0;
  int64_t out_c = 0;
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t groups = 1;  // groups == in_c == out_c: depthwise
  bool bias = true;
  DType dtype = DType::f32;

  int64_t out_h() const { return (in_h + pad_top + pad_bottom - kernel_h) / stride_h + 1; }
  int64_t out_w() const { return (in_w + pad_left + pad_right - kernel_w) / stride_w + 1; }
  std::string to_string() const;
  // Error naming the shape when sizes, channels, kernel, stride or groups are not positive, padding
  // is negative, channels do not divide into groups, or the kernel exceeds the padded input.
  void validate() const;
};

// y[N,OH,OW,OC] = conv(x[N,H,W,IC], w[OC, IC/groups, KH, KW]) + b[OC]
// How a convolution's filters lie in memory: PyTorch's [O, I/groups, KH, KW] (the parameters, their
// gradients and checkpoints), or channels-last [O, KH, KW, I/groups] (what cuDNN's NHWC kernels read).
enum class FilterLayout { oihw, ohwi };
const char* filter_layout_name(FilterLayout layout);

// The filter layout of a convolution op: the one it computes in, and the one its callers hand it w in.
// By default w is OIHW, which an op computing in another layout reorders at every call; after
// take_filters_in(filter_layout()) the caller hands w in the op's own layout (a copy nn::Model writes
// once per update), and the op reorders nothing. The gradient dw stays OIHW either way.
class FilterLayoutChoice {
 public:
  virtual ~FilterLayoutChoice() = default;
  virtual FilterLayout filter_layout() const { return FilterLayout::oihw; }
  // Refuses (Error) a layout other than OIHW and filter_layout(). Before the op's first call.
  virtual void take_filters_in(FilterLayout layout);
};

class ConvOp : public OpImplementation, public FilterLayoutChoice {
 public:
  virtual ~ConvOp() = default;
  virtual void forward(const void* x, const void* w, const float* b, void* y) = 0;
  // dx = conv_transpose(dy, w); dx is overwritten.
  virtual void backward_data(const void* dy, const void* w, void* dx) = 0;
  // dw, db (db may be null when the op has no bias) are overwritten, not accumulated.
  virtual void backward_weights(const void* x, const void* dy, float* dw, float* db) = 0;
};

struct PoolShape;

// A convolution and the activation after it as one op (Conv2D with an activation), so that a backend
// may apply the activation while the output is in cache and take its gradient from y.
class ActivatedConvOp : public OpImplementation, public FilterLayoutChoice {
 public:
  virtual ~ActivatedConvOp() = default;
  // pre = conv(x, w) + b; y = activation(pre); with the activation none, y is pre (the same
  // pointer). pre is the op's to keep what backward needs in: an op may leave it unwritten.
  virtual void forward(const void* x, const void* w, const float* b, void* pre, void* y) = 0;
  // From dy, the gradient of y: dw, db (overwritten; db null without a bias) and, when dx is not
  // null, dx. x, pre and y are as forward left them. dpre (pre's size; null when the activation is
  // none) is scratch space.
  virtual void backward(const void* x, const void* pre, const void* y, const void* dy, const void* w, void* dpre,
                        float* dw, float* db, void* dx) = 0;
  // Lets the op run the pooling that follows it, as SeparableConvOp::absorb_pool: forward then writes
  // pool(y) into `pooled` and may leave pre and y unwritten, and backward takes dy as the gradient of
  // `pooled`. Returns false, changing nothing, where the op cannot (the default).
  virtual bool absorb_pool(const PoolShape& pool, void* pooled) { return false; }
};

class PoolOp;

// What a composed op needs from its backend to take over the max pooling after it (absorb_pool): the
// backend's pooling op, and scratch memory on its device. Without it (empty functions) it takes none.
struct PoolAbsorption {
  std::function<std::unique_ptr<PoolOp>(const PoolShape&)> make_pool;
  std::function<Tensor(const Shape&, DType, const std::string&)> make_buffer;
};

// The ConvOp, and the activation's kernels on `stream` (every backend's ActivatedConvOp unless it has
// a fused one).
std::unique_ptr<ActivatedConvOp> compose_activated_conv(const ConvShape& shape, Activation activation,
                                                        std::unique_ptr<ConvOp> conv, Stream& stream);
// The same where conv's forward already applies the activation (a backend's convolution with the
// activation as a post-op): the forward writes y alone and leaves pre unwritten; the backward is the
// composed one (the activation's gradient from y on `stream`, then conv's backward passes). With
// `absorption` it takes over a max pooling after it in windows that do not overlap (absorb_pool): the
// forward then pools y, and the backward forms the activation's gradient at the pooled size from the
// pooled output (y wherever the gradient is not zero) and expands it with the pooling's backward, in
// place of expanding the gradient and then taking the activation's gradient at y's size.
std::unique_ptr<ActivatedConvOp> compose_post_activated_conv(const ConvShape& shape, Activation activation,
                                                             std::unique_ptr<ConvOp> conv, Stream& stream,
                                                             PoolAbsorption absorption = {});

// SeparableConv2D's two convolutions and its activation as one op: a depthwise convolution without
// bias (groups == channels), then a pointwise (1x1, stride 1, unpadded) convolution with bias, then
// the activation, so a backend may run them image by image with the intermediates in cache.
struct SeparableConvShape {
  ConvShape depthwise;  // x[N,H,W,C] -> mid[N,OH,OW,C], weights [C, 1, KH, KW]
  ConvShape pointwise;  // mid -> pre[N,OH,OW,F], weights [F, C, 1, 1], bias [F]
  Activation activation = Activation::none;  // pre -> y
  std::string to_string() const;
  // Error naming the shapes unless depthwise is depthwise without bias and pointwise is pointwise on
  // its output, in the same dtype and batch.
  void validate() const;
};

class SeparableConvOp : public OpImplementation {
 public:
  virtual ~SeparableConvOp() = default;
  // mid = depthwise(x, w_dw); pre = pointwise(mid, w_pw) + b; y = activation(pre). With the
  // activation none, y is pre (the same pointer). mid and pre are the op's to keep what backward
  // needs in: an op may leave them unwritten and recompute from x and y instead (the cpu fused op).
  virtual void forward(const void* x, const void* w_dw, const void* w_pw, const float* b, void* mid, void* pre,
                       void* y) = 0;
  // From dy, the gradient of y: dw_dw, dw_pw, db (overwritten) and, when dx is not null, dx. x, mid,
  // pre and y are as forward left them. dpre (pre's size; null when the activation is none) and dmid
  // (mid's size) are scratch space: an op may leave them unwritten.
  virtual void backward(const void* x, const void* mid, const void* pre, const void* y, const void* dy,
                        const void* w_dw, const void* w_pw, void* dpre, void* dmid, float* dw_dw, float* dw_pw,
                        float* db, void* dx) = 0;
  // Lets the op run the pooling that follows it (`pool`: its input is y, batch and type as this op's),
  // where y is still in cache: forward then writes pool(y) into `pooled` and may leave y unwritten, and
  // backward takes dy as the gradient of `pooled` (the pooling's output shape) and reads `pooled`, not y.
  // Returns false, changing nothing, where the op cannot (the default).
  virtual bool absorb_pool(const PoolShape& pool, void* pooled) { return false; }
};

// The depthwise op, then the pointwise op with the activation (every backend's SeparableConvOp unless
// it has a fused one).
std::unique_ptr<SeparableConvOp> compose_separable_conv(const SeparableConvShape& shape,
                                                        std::unique_ptr<ConvOp> depthwise,
                                                        std::unique_ptr<ActivatedConvOp> pointwise);

struct InnerProductShape {
  int64_t batch = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  DType dtype = DType::f32;
  std::string to_string() const;
};

// y[N,OUT] = x[N,IN] * w[OUT,IN]^T + b[OUT]
class InnerProductOp : public OpImplementation {
 public:
  virtual ~InnerProductOp() = default;
  virtual void forward(const void* x, const void* w, const float* b, void* y) = 0;
  virtual void backward_data(const void* dy, const void* w, void* dx) = 0;
  virtual void backward_weights(const void* x, const void* dy, float* dw, float* db) = 0;
};

// The matmul op family: batch independent products C = alpha op(A) op(B) (+ bias) of row-major
// matrices, op(X) = X or X^T, with an optional epilogue. Dense layers' rows and attention's products
// over (sample x head) batches are all of this one shape. Strides are in elements; 0 takes the
// contiguous value (lda: op(A)'s stored row length, k without a transpose and m with one; stride_a:
// m * k; likewise for B and C).
enum class MatmulEpilogue {
  none,
  gelu,  // aux = the pre-activation (alpha op(A) op(B) + bias), C = gelu(aux) (exact erf form)
  // aux = f32 [m], aux[i] = the sum over k of op(A)[i, k]: a dense layer's bias gradient where the
  // product is its weight gradient dW = dY^T X (op(A) = dY^T). One matrix (batch 1), f32 output.
  bias_gradient,
};
std::string matmul_epilogue_name(MatmulEpilogue e);

struct MatmulShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float alpha = 1.0f;
  bool bias = false;  // an f32 [n] bias added to every row of C, before the epilogue
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  DType dtype = DType::f32;      // A and B (f32, bf16, f16)
  DType out_dtype = DType::f32;  // C and aux: dtype or f32
  // The strides with the contiguous values filled in.
  int64_t lda_or() const { return lda > 0 ? lda : (trans_a ? m : k); }
  int64_t ldb_or() const { return ldb > 0 ? ldb : (trans_b ? k : n); }
  int64_t ldc_or() const { return ldc > 0 ? ldc : n; }
  int64_t stride_a_or() const { return stride_a > 0 ? stride_a : m * k; }
  int64_t stride_b_or() const { return stride_b > 0 ? stride_b : k * n; }
  int64_t stride_c_or() const { return stride_c > 0 ? stride_c : m * n; }
  std::string to_string() const;  // "matmul{batch 24, 65x65x32, A^T, B, alpha 0.177, gelu, bf16 -> bf16}"
  // Error naming the shape when a size is not positive, a leading dimension is shorter than its row,
  // the types are not float types, out_dtype is neither dtype nor f32, or a bias gradient is asked of
  // a batch or into a 16-bit output.
  void validate() const;
};

// Made once per shape by Backend::make_matmul and reused: nothing is allocated when it runs.
class MatmulOp : public OpImplementation {
 public:
  virtual ~MatmulOp() = default;
  // c = alpha op(a) op(b) (+ bias) (-> epilogue); bias is null without one; aux is the epilogue's
  // second output (gelu: the pre-activation in C's layout and type; bias_gradient: f32 [m]), null without.
  virtual void run(const void* a, const void* b, const float* bias, void* c, void* aux) = 0;
};

enum class PoolKind { max, average };

struct PoolShape {
  PoolKind kind = PoolKind::max;
  int64_t batch = 0;
  int64_t in_h = 0, in_w = 0, channels = 0;
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  DType dtype = DType::f32;
  // Average pooling: padded cells are excluded from the divisor (Keras 'same', PyTorch
  // count_include_pad=False), or counted in it with count_include_pad (PyTorch's default).
  bool count_include_pad = false;
  int64_t out_h() const { return (in_h + pad_top + pad_bottom - kernel_h) / stride_h + 1; }
  int64_t out_w() const { return (in_w + pad_left + pad_right - kernel_w) / stride_w + 1; }
  std::string to_string() const;
  // Error naming the shape when sizes, channels, kernel or stride are not positive, padding is
  // negative or not smaller than the kernel, or the kernel exceeds the padded input.
  void validate() const;
};

// Whether `pool` is a max pooling, in windows that do not overlap, of an output of this type, batch and
// [h, w, channels]: the pooling an op may take over (absorb_pool). With windows that do not overlap,
// each cell's gradient comes from one window, and where it is not zero the cell holds the pooled
// output, so an activation's gradient formed at the pooled size is the number formed at the output's.
bool absorbable_max_pool(const PoolShape& pool, DType dtype, int64_t batch, int64_t h, int64_t w, int64_t channels);

// Max pooling keeps what backward needs (the argmax workspace) inside the op, so forward with
// training = true must precede backward.
class PoolOp : public OpImplementation {
 public:
  virtual ~PoolOp() = default;
  virtual void forward(const void* x, void* y, bool training) = 0;
  virtual void backward(const void* dy, void* dx) = 0;
};

// BatchNorm2d's normalization of `batch` x `spatial` rows of `channels` values (NHWC: the channel is
// the last dimension), as PyTorch's nn.BatchNorm2d, with a ReLU after it or none.
struct BatchNormShape {
  int64_t batch = 0, spatial = 1, channels = 0;
  Activation activation = Activation::none;
  double momentum = 0.1, eps = 1e-5;
  DType dtype = DType::f32;
  int64_t rows() const { return batch * spatial; }
  std::string to_string() const;  // "batch_norm{batch 8, spatial 1024, channels 16, relu, f32}"
  // Error naming the shape when a size is not positive, eps is negative or momentum is outside [0, 1].
  void validate() const;
};

// A backend's batch normalization for one shape. Weights, biases, the running statistics and the
// saved statistics are f32 [C]; x, y, dy and dx are in the shape's dtype. Backends that have one
// (cuda: cuDNN) run plain BatchNorm through it; the layer's own kernels (kernels/batch_norm.hpp) run
// everywhere else and always for SyncBatchNorm, whose sums are reduced across ranks between passes.
class BatchNormOp : public OpImplementation {
 public:
  virtual ~BatchNormOp() = default;
  // y = act((x - mean) * save_invstd * weight + bias) with the batch's mean and biased variance;
  // running_mean and running_var move towards the mean and the unbiased variance by the momentum.
  // save_mean and save_invstd are what backward reads.
  virtual void forward_training(const void* x, const float* weight, const float* bias, float* running_mean,
                                float* running_var, float* save_mean, float* save_invstd, void* y) = 0;
  // y = act((x - running_mean) / sqrt(running_var + eps) * weight + bias).
  virtual void forward_inference(const void* x, const float* weight, const float* bias, const float* running_mean,
                                 const float* running_var, void* y) = 0;
  // From dy, the gradient of y, with x and y as the training forward left them: dweight and dbias
  // (overwritten) and dx.
  virtual void backward(const void* x, const void* y, const void* dy, const float* weight, const float* save_mean,
                        const float* save_invstd, float* dweight, float* dbias, void* dx) = 0;
};

}  // namespace scaletrain
