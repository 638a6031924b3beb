// The CUDA backend's convolution (grouped and depthwise included): forward, backward-data and
// backward-weights on cuDNN's legacy convolution API, NHWC activations, f32 bias and weight
// gradients. What a shape becomes in cuDNN (descriptors, explicit padding, choice policy) is the
// pure, CPU-tested backend/cudnn_plan.hpp; this file makes the cuDNN calls.
//
// Decisions and why:
// - cuDNN 9's legacy entry points (cudnnFindConvolution*AlgorithmEx, cudnnConvolutionForward /
//   BackwardData / BackwardFilter; deprecated, still shipped in 9.x, no warnings unless
//   CUDNN_WARN_DEPRECATED is defined) rather than the graph API: each measured candidate carries its
//   determinism flag and its exact workspace, the path is the one PyTorch has exercised for years,
//   and there are no runtime-compiled engines whose support we cannot test without a GPU.
// - Filters channels-last (CUDNN_TENSOR_NHWC, OHWI in memory), like the activations: the layout
//   cuDNN's NHWC tensor-core kernels are written for, and what PyTorch (channels_last weights) and
//   TensorFlow (OHWI for NHWC compute) hand cuDNN. Our weights are OIHW (checkpoints load into
//   PyTorch): a layer that takes its filters in the op's layout (take_filters_in(OHWI); nn::Model
//   writes that copy once per update) hands w as OHWI, and otherwise each call reorders w into a
//   per-op OHWI buffer (kernels/conv_layout.hpp). Backward-weights writes the OHWI gradient there and
//   reorders it back to OIHW f32 (the gradients stay in PyTorch's layout).
// - Weight gradients in bf16/f16: cuDNN's backward-filter writes dw in the data type of x and dy
//   (PSEUDO_HALF / PSEUDO_BFLOAT16 configurations: half storage, f32 compute; there is no
//   configuration with half x/dy and a float dw). So dw is accumulated in f32 inside cuDNN, rounded
//   once to the storage type in the per-op OHWI buffer, and cast to the f32 dw by the reorder. That
//   is one rounding of the final sum (what PyTorch autocast does, whose weight gradients are in the
//   autocast type); the alternative, casting x and dy to f32 and running an FMA backward-filter,
//   would cost activation-sized f32 buffers and the tensor cores. An f16 dw can overflow where an
//   f32 one would not: that is an inf the dynamic loss scaler sees and backs off from.
// - Bias in the forward's epilogue where cuDNN runs it: cudnnConvolutionBiasActivationForward (y =
//   act(conv(x) + bias), alpha2 = 0) with the layer's ReLU, or the identity (which cuDNN documents for
//   IMPLICIT_PRECOMP_GEMM only). Its bias is of the data's type in cuDNN's half configurations, so a
//   bf16/f16 op casts its f32 bias first (PyTorch autocast's bias is in the autocast type too); y is
//   rounded once. One trial call on zeros at creation, with the chosen algorithm, decides: where cuDNN
//   refuses it, the bias stays apart, kernels::BiasAddStored after the forward (y rounded twice).
//   db is the reduction primitive's column sums of dy (kernels/reduction.hpp: an order fixed by the
//   shape and the SM count, deterministic), with a per-op buffer of partial sums.
// - Asymmetric padding (TensorFlow 'same' with stride 2): cuDNN's descriptor pads symmetrically, so
//   it gets min(top, bottom) / min(left, right) and the rest is padded explicitly (zeros) into a
//   per-op buffer; backward-data computes the padded input's gradient there and crops it; backward-
//   weights pads x again (forward's copy may have been overwritten by backward-data). This is what
//   TensorFlow does on cuDNN.
// - Algorithm choice once per shape, at op creation, as the context says (backend/algorithm_book.hpp):
//   timed: cudnnFind*AlgorithmEx times every algorithm on scratch tensors from our caching allocator
//   and a workspace as large as the largest heuristic candidate within the limit; the plan's policy
//   keeps those that ran, are deterministic when run.deterministic, fit the workspace limit and use
//   an allowed math type (no TF32 for f32 unless train.allow_tf32, never a down-conversion), and
//   takes the fastest (PyTorch's cudnn.benchmark, deterministic candidates included). A timed choice
//   may differ between runs, which is why a run records its choices and a resumed or pinned run
//   takes them from the book instead. heuristic: cuDNN's ranked list (cudnnGetConvolution*Algorithm_v7,
//   nothing timed), its first allowed candidate. pinned: the book's algorithm and math type, refused
//   when cuDNN does not support it here, when it needs more workspace than the run allows, or when it
//   is nondeterministic in a deterministic run. Each direction gets a convolution descriptor with
//   its algorithm's math type (cuDNN selects kernels by algorithm and math type). Identical layers
//   share their record in the context's book; the largest workspace of the three is reserved on the
//   op's stream.
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "cudnn_descriptors.hpp"
#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/backend/cudnn_plan.hpp"
#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/conv_layout.hpp"
#include "scaletrain/kernels/launch_cuda.hpp"

namespace scaletrain::cuda {
namespace {

CudnnSelection selection_of(const CudaOpSettings& s, int64_t limit) {
  return {s.deterministic, s.allow_tf32, limit, s.workspace_auto};
}

std::string algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      break;
  }
  return "FWD_ALGO_" + std::to_string(static_cast<int>(a));
}

std::string algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
      return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
      return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      break;
  }
  return "BWD_DATA_ALGO_" + std::to_string(static_cast<int>(a));
}

std::string algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
      return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
      return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
      return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
      return "FFT_TILING";
    default:
      break;
  }
  return "BWD_FILTER_ALGO_" + std::to_string(static_cast<int>(a));
}

// One perf result of cudnnFind*, in the plan's terms.
template <class Perf>
CudnnAlgoResult translate(const Perf& perf) {
  CudnnAlgoResult r;
  r.algo = static_cast<int>(perf.algo);
  r.name = algo_name(perf.algo);
  r.ok = perf.status == CUDNN_STATUS_SUCCESS;
  r.status = cudnnGetErrorString(perf.status);
  r.time_ms = perf.time;
  r.workspace_bytes = static_cast<int64_t>(perf.memory);
  r.deterministic = perf.determinism == CUDNN_DETERMINISTIC;
  r.math = from_cudnn(perf.mathType);
  return r;
}

// The scratch tensors of one algorithm search (made only for a timed choice, released after it):
// the convolution's input (x or dx), filter (w or dw) and output (y or dy), zero-filled, and a
// workspace grown to what the candidates ask (smaller when memory is short: candidates that need
// more than we pass report a failed status and are dropped).
struct SearchBuffers {
  Tensor x, w, y, workspace;
  CudaOpContext& ctx;
  std::string who;
  SearchBuffers(CudaOpContext& c, const CudnnConvPlan& p, cudaStream_t stream)
      : ctx(c), who("algorithm search for " + p.shape.to_string()) {
    x = ctx.buffer({p.x_conv.elements()}, p.shape.dtype, who + ": input");
    w = ctx.buffer({p.filter_elements()}, p.shape.dtype, who + ": filter");
    y = ctx.buffer({p.y.elements()}, p.shape.dtype, who + ": output");
    for (const Tensor* t : {&x, &w, &y}) ST_CUDA_CHECK(cudaMemsetAsync(t->device_raw(), 0, t->bytes(), stream));
  }
  void ensure_workspace(int64_t bytes) {
    if (static_cast<int64_t>(workspace.bytes()) >= bytes) return;
    workspace = Tensor();
    for (; bytes > 0; bytes /= 4) {
      try {
        workspace = ctx.buffer({bytes}, DType::u8, who + ": workspace");
        return;
      } catch (const Error&) {
        // Try a quarter of it: the candidates that need more are dropped.
      }
    }
  }
  void* ws() const { return workspace.bytes() ? workspace.device_raw() : nullptr; }
  size_t ws_bytes() const { return workspace.bytes(); }
};

template <class T>
class CudnnConv final : public ConvOp {
 public:
  // epilogue: the activation to try in the fused forward with the bias (ReLU; anything else tries the
  // identity and leaves the activation to the caller); null: no fused forward.
  CudnnConv(CudaOpContext& ctx, const ConvShape& shape, cudaStream_t stream, const Activation* epilogue)
      : ctx_(ctx),
        stream_(stream),
        plan_(plan_cudnn_conv(shape, selection_of(ctx.settings(), ctx.settings().workspace_limit_bytes))),
        who_(shape.to_string()),
        x_desc_(plan_.x_conv, plan_.data_type),
        y_desc_(plan_.y, plan_.data_type),
        w_desc_(plan_) {
    use_device(ctx_.device());
    ctx_.remember(shape, stream_);
    const ConvolutionDescriptor search_desc(plan_, plan_.math);
    int n = 0, c = 0, h = 0, w = 0;
    ST_CUDNN_CHECK_FOR(
        who_, cudnnGetConvolution2dForwardOutputDim(search_desc.get(), x_desc_.get(), w_desc_.get(), &n, &c, &h, &w));
    ST_CHECK(n == plan_.y.n && c == plan_.y.c && h == plan_.y.h && w == plan_.y.w, "cuDNN convolution ",
             shape.to_string(), ": cuDNN computes an output of ", n, "x", c, "x", h, "x", w, " (NCHW), the plan ",
             plan_.y.to_string());

    filter_ = ctx_.buffer({plan_.filter_elements()}, shape.dtype, "conv filter (OHWI) " + shape.to_string());
    if (plan_.explicit_pad.any())
      padded_ = ctx_.buffer({plan_.x_conv.elements()}, shape.dtype, "conv padded input " + shape.to_string());
    if (shape.bias) {
      bias_grad_plan_ = kernels::plan_column_sums(output_rows(), shape.out_c, 1, ctx_.multiprocessor_count());
      bias_partial_ = ctx_.buffer({std::max<int64_t>(1, bias_grad_plan_.partial_size())}, DType::f64,
                                  "conv bias gradient partial sums " + shape.to_string());
    }

    fwd_ = choose(ConvDirection::forward, search_desc);
    bwd_data_ = choose(ConvDirection::backward_data, search_desc);
    bwd_filter_ = choose(ConvDirection::backward_filter, search_desc);
    search_.reset();
    fwd_desc_ = std::make_unique<ConvolutionDescriptor>(plan_, fwd_.math);
    bwd_data_desc_ = std::make_unique<ConvolutionDescriptor>(plan_, bwd_data_.math);
    bwd_filter_desc_ = std::make_unique<ConvolutionDescriptor>(plan_, bwd_filter_.math);
    const int64_t ws = std::max(
        {fwd_.workspace_bytes, bwd_data_.workspace_bytes, bwd_filter_.workspace_bytes, chosen_workspace_bytes()});
    ctx_.reserve_workspace(stream_, ws, "convolution " + shape.to_string());
    if (epilogue && shape.bias) try_fused_forward(*epilogue == Activation::relu);
  }

  // Whether forward applies the ReLU it was asked to fuse (with the bias).
  bool applies_relu() const { return fused_ && fused_relu_; }

  FilterLayout filter_layout() const override { return FilterLayout::ohwi; }
  void take_filters_in(FilterLayout layout) override {
    if (layout != FilterLayout::ohwi) ConvOp::take_filters_in(layout);
    filters_ohwi_ = layout == FilterLayout::ohwi;
  }

  void forward(const void* x, const void* w, const float* b, void* y) override {
    use_device(ctx_.device());
    const void* filter = ohwi_filter(w);
    const void* input = x;
    if (plan_.explicit_pad.any()) {
      pad(x);
      input = padded_.device_raw();
    }
    if (fused_) {
      ST_CHECK(b != nullptr, "convolution ", plan_.shape.to_string(), " has a bias but no bias was given");
      ST_CUDNN_CHECK_FOR(who_, fused_forward(input, filter, stored_bias(b), y));
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    ST_CUDNN_CHECK_FOR(who_, cudnnConvolutionForward(
                                 ctx_.cudnn(stream_), &one, x_desc_.get(), input, w_desc_.get(), filter,
                                 fwd_desc_->get(), static_cast<cudnnConvolutionFwdAlgo_t>(fwd_.algo),
                                 ctx_.workspace(stream_), workspace_bytes(), &zero, y_desc_.get(), y));
    if (plan_.shape.bias) {
      ST_CHECK(b != nullptr, "convolution ", plan_.shape.to_string(), " has a bias but no bias was given");
      ctx_.launch(stream_, "conv bias", plan_.y.elements(),
                           kernels::BiasAddStored<T>{static_cast<T*>(y), b, plan_.shape.out_c});
    }
  }

  void backward_data(const void* dy, const void* w, void* dx) override {
    use_device(ctx_.device());
    const void* filter = ohwi_filter(w);
    void* grad = plan_.explicit_pad.any() ? padded_.device_raw() : dx;
    const float one = 1.0f, zero = 0.0f;
    ST_CUDNN_CHECK_FOR(who_, cudnnConvolutionBackwardData(
                                 ctx_.cudnn(stream_), &one, w_desc_.get(), filter, y_desc_.get(), dy,
                                 bwd_data_desc_->get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(bwd_data_.algo),
                                 ctx_.workspace(stream_), workspace_bytes(), &zero, x_desc_.get(), grad));
    if (plan_.explicit_pad.any())
      ctx_.launch(stream_, "conv crop", plan_.x.elements(),
                           kernels::CropNhwc<T>{padded_.device_data<T>(), static_cast<T*>(dx), plan_.pad_geometry()});
  }

  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    ST_CHECK(!plan_.shape.bias || db != nullptr, "convolution ", plan_.shape.to_string(),
             " has a bias but no bias gradient buffer was given");
    use_device(ctx_.device());
    const void* input = x;
    if (plan_.explicit_pad.any()) {
      pad(x);
      input = padded_.device_raw();
    }
    const float one = 1.0f, zero = 0.0f;
    // dw in the storage type, OHWI, into the filter buffer (w is not needed here).
    ST_CUDNN_CHECK_FOR(who_,
                       cudnnConvolutionBackwardFilter(
                           ctx_.cudnn(stream_), &one, x_desc_.get(), input, y_desc_.get(), dy, bwd_filter_desc_->get(),
                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(bwd_filter_.algo), ctx_.workspace(stream_),
                           workspace_bytes(), &zero, w_desc_.get(), filter_.device_raw()));
    ctx_.launch(stream_, "conv dw to oihw f32", plan_.filter_elements(),
                         kernels::FilterOhwiToOihw<T, float>{filter_.device_data<T>(), dw, plan_.filter_geometry()});
    if (plan_.shape.bias) {
      ctx_.launch_column_sums(stream_, "conv bias grad", bias_grad_plan_,
                              kernels::ColumnValues<T>{static_cast<const T*>(dy), plan_.shape.out_c},
                              bias_partial_.device_data<double>(), kernels::StoreFloat{db});
    }
  }

 private:
  // The output's rows (N * OH * OW), each of out_c channels.
  int64_t output_rows() const { return plan_.y.elements() / plan_.shape.out_c; }
  size_t workspace_bytes() const { return static_cast<size_t>(ctx_.workspace_bytes(stream_)); }

  // y = act(conv(x, w) + bias) in one cuDNN call (alpha2 = 0: z is y, unread).
  cudnnStatus_t fused_forward(const void* x, const void* w, const void* bias, void* y) {
    const float one = 1.0f, zero = 0.0f;
    return cudnnConvolutionBiasActivationForward(
        ctx_.cudnn(stream_), &one, x_desc_.get(), x, w_desc_.get(), w, fwd_desc_->get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(fwd_.algo), ctx_.workspace(stream_), workspace_bytes(), &zero,
        y_desc_.get(), y, bias_desc_->get(), bias, activation_->get(), y_desc_.get(), y);
  }

  // The f32 bias as the fused forward reads it: itself in f32, cast to the storage type otherwise.
  const void* stored_bias(const float* b) {
    if constexpr (std::is_same_v<T, float>) {
      return b;
    } else {
      ctx_.launch(stream_, "conv bias cast", plan_.shape.out_c,
                  kernels::Cast<float, T>{b, bias_stored_.device_data<T>()});
      return bias_stored_.device_raw();
    }
  }

  // The fused forward with `relu` or the identity, kept where a trial call on zeros runs with the
  // chosen algorithm (a refusal is cuDNN's answer at the call; an execution error shows at the
  // synchronize, here at creation, never in a step).
  void try_fused_forward(bool relu) {
    fused_relu_ = relu;
    activation_ = std::make_unique<ActivationDescriptor>(relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY);
    bias_desc_ = std::make_unique<TensorDescriptor>(nhwc_tensor(1, plan_.shape.out_c, 1, 1), plan_.data_type);
    bias_stored_ = ctx_.buffer({plan_.shape.out_c}, plan_.shape.dtype, "conv bias (storage type) " + who_);
    const SearchBuffers scratch(ctx_, plan_, stream_);
    ST_CUDA_CHECK(cudaMemsetAsync(bias_stored_.device_raw(), 0, bias_stored_.bytes(), stream_));
    const cudnnStatus_t st = fused_forward(scratch.x.device_raw(), scratch.w.device_raw(), bias_stored_.device_raw(),
                                           scratch.y.device_raw());
    ST_CUDA_CHECK(cudaStreamSynchronize(stream_));
    fused_ = st == CUDNN_STATUS_SUCCESS;
    if (!fused_) {
      activation_.reset();
      bias_desc_.reset();
    }
  }

  // w as cuDNN reads it: as given where the layer hands OHWI filters, else reordered into filter_.
  const void* ohwi_filter(const void* w) {
    if (filters_ohwi_) return w;
    ctx_.launch(stream_, "conv filter to ohwi", plan_.filter_elements(),
        kernels::FilterOihwToOhwi<T, T>{static_cast<const T*>(w), filter_.device_data<T>(), plan_.filter_geometry()});
    return filter_.device_raw();
  }

  void pad(const void* x) {
    ctx_.launch(stream_, "conv pad", plan_.x_conv.elements(),
        kernels::PadNhwc<T>{static_cast<const T*>(x), padded_.device_data<T>(), plan_.pad_geometry(), 0.0f});
  }

  // The algorithm of `direction`: the book's record where the context pins one or an identical
  // layer made it, else a search (heuristic or timed) and the plan's policy; recorded in the book.
  CudnnAlgoResult choose(ConvDirection direction, const ConvolutionDescriptor& desc) {
    const CudnnSelection sel = selection_of(ctx_.settings(), ctx_.workspace_limit(stream_));
    const std::string key = conv_choice_key(plan_.shape, direction, sel).text;
    const AlgorithmMode mode = ctx_.algorithm_mode();
    if (mode == AlgorithmMode::pinned) return pinned(direction, sel, key);
    if (const auto made = ctx_.made_record(key)) return conv_choice_of(*made);
    const std::vector<CudnnAlgoResult> ranked = heuristic(direction, desc);
    std::vector<CudnnAlgoResult> timed;
    if (mode == AlgorithmMode::timed) timed = find(direction, desc, ranked, sel.workspace_limit_bytes);
    const CudnnAlgoResult choice =
        choose_conv_algorithm(mode == AlgorithmMode::timed ? timed : ranked, plan_.shape, direction, sel);
    log_new(conv_record(plan_.shape, direction, sel, choice, ranked, timed));
    return choice;
  }

  // The pinned book's algorithm for `direction`, checked against what this run allows.
  CudnnAlgoResult pinned(ConvDirection direction, const CudnnSelection& sel, const std::string& key) {
    const std::string what = "conv " + conv_direction_name(direction) + " " + plan_.shape.to_string();
    AlgorithmRecord r = pinned_record(ctx_.pinned(), key, what, ctx_.pinned_from());
    CudnnAlgoResult c = conv_choice_of(r);
    const ConvolutionDescriptor desc(plan_, c.math);
    const int64_t needed = workspace_size(direction, desc, c.algo);
    check_pinned_record(r, needed, sel.workspace_limit_bytes, sel.workspace_auto, sel.deterministic,
                        ctx_.pinned_from());
    c.workspace_bytes = needed;
    r.workspace_bytes = needed;
    log_new(std::move(r));
    return c;
  }

  void log_new(AlgorithmRecord r) {
    const std::string line = algorithm_record_line(r);
    if (ctx_.record(std::move(r))) ctx_.log_choice(line);
  }

  // cudnnGet*WorkspaceSize of `algo` with `desc`; -1 where cuDNN does not support it here.
  int64_t workspace_size(ConvDirection direction, const ConvolutionDescriptor& desc, int algo) {
    cudnnHandle_t h = ctx_.cudnn(stream_);
    size_t bytes = 0;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    switch (direction) {
      case ConvDirection::forward:
        st = cudnnGetConvolutionForwardWorkspaceSize(h, x_desc_.get(), w_desc_.get(), desc.get(), y_desc_.get(),
                                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes);
        break;
      case ConvDirection::backward_data:
        st = cudnnGetConvolutionBackwardDataWorkspaceSize(h, w_desc_.get(), y_desc_.get(), desc.get(), x_desc_.get(),
                                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
        break;
      case ConvDirection::backward_filter:
        st = cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x_desc_.get(), y_desc_.get(), desc.get(),
                                                            w_desc_.get(),
                                                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes);
        break;
    }
    return st == CUDNN_STATUS_SUCCESS ? static_cast<int64_t>(bytes) : -1;
  }

  // The workspace the three chosen algorithms need with their final descriptors
  // (cudnnGet*WorkspaceSize): a heuristic candidate's figure is cuDNN's estimate.
  int64_t chosen_workspace_bytes() {
    cudnnHandle_t h = ctx_.cudnn(stream_);
    size_t f = 0, d = 0, w = 0;
    ST_CUDNN_CHECK_FOR(
        who_, cudnnGetConvolutionForwardWorkspaceSize(h, x_desc_.get(), w_desc_.get(), fwd_desc_->get(), y_desc_.get(),
                                                      static_cast<cudnnConvolutionFwdAlgo_t>(fwd_.algo), &f));
    ST_CUDNN_CHECK_FOR(who_, cudnnGetConvolutionBackwardDataWorkspaceSize(
                                 h, w_desc_.get(), y_desc_.get(), bwd_data_desc_->get(), x_desc_.get(),
                                 static_cast<cudnnConvolutionBwdDataAlgo_t>(bwd_data_.algo), &d));
    ST_CUDNN_CHECK_FOR(who_, cudnnGetConvolutionBackwardFilterWorkspaceSize(
                                 h, x_desc_.get(), y_desc_.get(), bwd_filter_desc_->get(), w_desc_.get(),
                                 static_cast<cudnnConvolutionBwdFilterAlgo_t>(bwd_filter_.algo), &w));
    return static_cast<int64_t>(std::max({f, d, w}));
  }

  // cuDNN's ranked heuristic candidates for `direction` (cudnnGet*_v7): no timing, no scratch tensors.
  std::vector<CudnnAlgoResult> heuristic(ConvDirection direction, const ConvolutionDescriptor& desc) {
    cudnnHandle_t h = ctx_.cudnn(stream_);
    std::vector<CudnnAlgoResult> out;
    int max_count = 0, returned = 0;
    const auto ranked = [&](const auto& perf) {
      for (int i = 0; i < returned; ++i) {
        out.push_back(translate(perf[static_cast<size_t>(i)]));
        out.back().heuristic_rank = i;
      }
    };
    switch (direction) {
      case ConvDirection::forward: {
        ST_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
        ST_CUDNN_CHECK_FOR(
            who_, cudnnGetConvolutionForwardAlgorithm_v7(h, x_desc_.get(), w_desc_.get(), desc.get(), y_desc_.get(),
                                                         static_cast<int>(perf.size()), &returned, perf.data()));
        ranked(perf);
        break;
      }
      case ConvDirection::backward_data: {
        ST_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
        ST_CUDNN_CHECK_FOR(who_, cudnnGetConvolutionBackwardDataAlgorithm_v7(
                                     h, w_desc_.get(), y_desc_.get(), desc.get(), x_desc_.get(),
                                     static_cast<int>(perf.size()), &returned, perf.data()));
        ranked(perf);
        break;
      }
      case ConvDirection::backward_filter: {
        ST_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
        ST_CUDNN_CHECK_FOR(who_, cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                                     h, x_desc_.get(), y_desc_.get(), desc.get(), w_desc_.get(),
                                     static_cast<int>(perf.size()), &returned, perf.data()));
        ranked(perf);
        break;
      }
    }
    return out;
  }

  // cudnnFind*AlgorithmEx's timed candidates of `direction`, with a workspace as large as the
  // largest of the heuristic's candidates within `limit` asks.
  std::vector<CudnnAlgoResult> find(ConvDirection direction, const ConvolutionDescriptor& desc,
                                    const std::vector<CudnnAlgoResult>& ranked, int64_t limit) {
    if (!search_) search_ = std::make_unique<SearchBuffers>(ctx_, plan_, stream_);
    int64_t wanted = 0;
    for (const CudnnAlgoResult& c : ranked)
      if (c.ok && c.workspace_bytes <= limit) wanted = std::max(wanted, c.workspace_bytes);
    search_->ensure_workspace(wanted);
    const SearchBuffers& b = *search_;
    cudnnHandle_t h = ctx_.cudnn(stream_);
    std::vector<CudnnAlgoResult> out;
    int max_count = 0, returned = 0;
    switch (direction) {
      case ConvDirection::forward: {
        ST_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
        ST_CUDNN_CHECK_FOR(
            who_, cudnnFindConvolutionForwardAlgorithmEx(
                      h, x_desc_.get(), b.x.device_raw(), w_desc_.get(), b.w.device_raw(), desc.get(), y_desc_.get(),
                      b.y.device_raw(), static_cast<int>(perf.size()), &returned, perf.data(), b.ws(), b.ws_bytes()));
        for (int i = 0; i < returned; ++i) out.push_back(translate(perf[static_cast<size_t>(i)]));
        break;
      }
      case ConvDirection::backward_data: {
        ST_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
        ST_CUDNN_CHECK_FOR(
            who_, cudnnFindConvolutionBackwardDataAlgorithmEx(
                      h, w_desc_.get(), b.w.device_raw(), y_desc_.get(), b.y.device_raw(), desc.get(), x_desc_.get(),
                      b.x.device_raw(), static_cast<int>(perf.size()), &returned, perf.data(), b.ws(), b.ws_bytes()));
        for (int i = 0; i < returned; ++i) out.push_back(translate(perf[static_cast<size_t>(i)]));
        break;
      }
      case ConvDirection::backward_filter: {
        ST_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
        std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<size_t>(std::max(max_count, 1)));
        ST_CUDNN_CHECK_FOR(
            who_, cudnnFindConvolutionBackwardFilterAlgorithmEx(
                      h, x_desc_.get(), b.x.device_raw(), y_desc_.get(), b.y.device_raw(), desc.get(), w_desc_.get(),
                      b.w.device_raw(), static_cast<int>(perf.size()), &returned, perf.data(), b.ws(), b.ws_bytes()));
        for (int i = 0; i < returned; ++i) out.push_back(translate(perf[static_cast<size_t>(i)]));
        break;
      }
    }
    return out;
  }

  CudaOpContext& ctx_;
  cudaStream_t stream_;
  CudnnConvPlan plan_;
  std::string who_;          // "conv{...}", for errors
  TensorDescriptor x_desc_;  // the convolution's input: x, or the padded buffer
  TensorDescriptor y_desc_;
  FilterDescriptor w_desc_;
  bool fused_ = false, fused_relu_ = false;  // forward is the fused call, with ReLU or the identity
  std::unique_ptr<ActivationDescriptor> activation_;
  std::unique_ptr<TensorDescriptor> bias_desc_;
  Tensor bias_stored_;  // the fused forward's bias in the storage type (bf16/f16)
  Tensor filter_;  // OHWI weights reordered here (OIHW callers); backward-weights' OHWI gradient, storage type
  bool filters_ohwi_ = false;  // take_filters_in(OHWI): w arrives in cuDNN's layout
  Tensor padded_;  // explicit padding only: the padded input, or the padded input's gradient
  kernels::ColumnSumsPlan bias_grad_plan_;  // with a bias: db's column sums over dy [rows, out_c]
  Tensor bias_partial_;                     // and their partial sums, f64
  std::unique_ptr<SearchBuffers> search_;
  CudnnAlgoResult fwd_, bwd_data_, bwd_filter_;
  std::unique_ptr<ConvolutionDescriptor> fwd_desc_, bwd_data_desc_, bwd_filter_desc_;
};

}  // namespace

namespace {

template <class T>
std::unique_ptr<ConvOp> made(CudaOpContext& ctx, const ConvShape& shape, cudaStream_t stream,
                             const Activation* epilogue, bool* applies_relu) {
  auto op = std::make_unique<CudnnConv<T>>(ctx, shape, stream, epilogue);
  if (applies_relu) *applies_relu = op->applies_relu();
  return op;
}

std::unique_ptr<ConvOp> make_conv_of_type(CudaOpContext& ctx, const ConvShape& shape, cudaStream_t stream,
                                          const Activation* epilogue, bool* applies_relu) {
  switch (shape.dtype) {
    case DType::f32:
      return made<float>(ctx, shape, stream, epilogue, applies_relu);
    case DType::bf16:
      return made<bf16>(ctx, shape, stream, epilogue, applies_relu);
    case DType::f16:
      return made<f16>(ctx, shape, stream, epilogue, applies_relu);
    default:
      break;
  }
  ST_FAIL("cuDNN convolution ", shape.to_string(), ": cuDNN computes in f32, bf16 or f16, not ",
          dtype_name(shape.dtype));
}

}  // namespace

std::unique_ptr<ConvOp> make_cudnn_conv(CudaOpContext& ctx, const ConvShape& shape, cudaStream_t stream) {
  return make_conv_of_type(ctx, shape, stream, nullptr, nullptr);
}

std::unique_ptr<ConvOp> make_cudnn_conv_with_epilogue(CudaOpContext& ctx, const ConvShape& shape, cudaStream_t stream,
                                                      Activation activation, bool* applies_activation) {
  bool relu = false;
  auto op = make_conv_of_type(ctx, shape, stream, &activation, &relu);
  *applies_activation = relu && activation == Activation::relu;
  return op;
}

}  // namespace scaletrain::cuda
