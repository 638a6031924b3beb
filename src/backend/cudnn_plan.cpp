// The pure host side of the cuDNN convolution, pooling and batch normalization: descriptor parameters
// from a shape, the choice key and the algorithm choice policy (backend/cudnn_plan.hpp). No cuDNN here.
#include "scaletrain/backend/cudnn_plan.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <initializer_list>
#include <sstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain {
namespace {

CudnnType cudnn_type(DType t, const std::string& what) {
  switch (t) {
    case DType::f32:
      return CudnnType::f32;
    case DType::bf16:
      return CudnnType::bf16;
    case DType::f16:
      return CudnnType::f16;
    default:
      break;
  }
  ST_FAIL(what, ": cuDNN computes in f32, bf16 or f16, not ", dtype_name(t));
}

// Every dim and stride of a legacy cuDNN descriptor is an int.
void check_fits_int(const std::string& what, std::initializer_list<int64_t> values) {
  for (int64_t v : values)
    ST_CHECK(v <= INT_MAX, what, ": a size or stride of ", v, " does not fit cuDNN's 32-bit descriptor fields");
}

void check_fits_int(const std::string& what, const CudnnTensor4d& t) {
  check_fits_int(what, {t.n, t.c, t.h, t.w, t.n_stride, t.c_stride, t.h_stride, t.w_stride});
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1 << 20));
  return buf;
}


}  // namespace

std::string cudnn_type_name(CudnnType t) {
  switch (t) {
    case CudnnType::f32:
      return "f32";
    case CudnnType::bf16:
      return "bf16";
    case CudnnType::f16:
      return "f16";
  }
  return "?";
}

std::string cudnn_math_name(CudnnMath m) {
  switch (m) {
    case CudnnMath::fma:
      return "fma";
    case CudnnMath::default_math:
      return "default";
    case CudnnMath::tensor_op:
      return "tensor_op";
    case CudnnMath::tensor_op_allow_conversion:
      return "tensor_op_allow_conversion";
  }
  return "?";
}

CudnnMath parse_cudnn_math(const std::string& name) {
  for (CudnnMath m : {CudnnMath::fma, CudnnMath::default_math, CudnnMath::tensor_op, CudnnMath::tensor_op_allow_conversion})
    if (cudnn_math_name(m) == name) return m;
  ST_FAIL("'", name, "' is not a cuDNN math type (fma, default, tensor_op, tensor_op_allow_conversion)");
}

std::string conv_direction_name(ConvDirection d) {
  switch (d) {
    case ConvDirection::forward:
      return "fwd";
    case ConvDirection::backward_data:
      return "bwd data";
    case ConvDirection::backward_filter:
      return "bwd filter";
  }
  return "?";
}

std::string CudnnTensor4d::to_string() const {
  std::ostringstream os;
  os << "[" << n << ", " << c << ", " << h << ", " << w << "] strides [" << n_stride << ", " << c_stride << ", "
     << h_stride << ", " << w_stride << "]";
  return os.str();
}

CudnnTensor4d nhwc_tensor(int64_t n, int64_t c, int64_t h, int64_t w) {
  CudnnTensor4d t;
  t.n = n;
  t.c = c;
  t.h = h;
  t.w = w;
  t.w_stride = c;
  t.h_stride = w * c;
  t.n_stride = h * w * c;
  t.c_stride = 1;
  return t;
}

CudnnMath conv_math(CudnnType data, bool allow_tf32) {
  if (data == CudnnType::f32) return allow_tf32 ? CudnnMath::default_math : CudnnMath::fma;
  return CudnnMath::tensor_op;
}

bool conv_math_allowed(CudnnMath math, CudnnType data, bool allow_tf32) {
  if (math == CudnnMath::tensor_op_allow_conversion) return false;
  if (data == CudnnType::f32 && !allow_tf32) return math == CudnnMath::fma;
  return true;
}

kernels::NhwcPadGeometry CudnnConvPlan::pad_geometry() const {
  return {x.h, x.w, x.c, x_conv.h, x_conv.w, explicit_pad.top, explicit_pad.left};
}

kernels::FilterGeometry CudnnConvPlan::filter_geometry() const { return {filter_k, filter_c, filter_h, filter_w}; }

CudnnConvPlan plan_cudnn_conv(const ConvShape& s, const CudnnSelection& selection) {
  s.validate();
  const std::string what = "cuDNN convolution " + s.to_string();
  CudnnConvPlan p;
  p.shape = s;
  p.data_type = cudnn_type(s.dtype, what);
  p.compute_type = CudnnType::f32;
  p.math = conv_math(p.data_type, selection.allow_tf32);

  // The symmetric part goes into the descriptor, the rest is padded explicitly.
  p.pad_h = std::min(s.pad_top, s.pad_bottom);
  p.pad_w = std::min(s.pad_left, s.pad_right);
  p.explicit_pad = {s.pad_top - p.pad_h, s.pad_left - p.pad_w, s.pad_bottom - p.pad_h, s.pad_right - p.pad_w};
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  p.groups = s.groups;

  p.x = nhwc_tensor(s.batch, s.in_c, s.in_h, s.in_w);
  p.x_conv = nhwc_tensor(s.batch, s.in_c, s.in_h + p.explicit_pad.top + p.explicit_pad.bottom,
                         s.in_w + p.explicit_pad.left + p.explicit_pad.right);
  p.y = nhwc_tensor(s.batch, s.out_c, s.out_h(), s.out_w());
  p.filter_k = s.out_c;
  p.filter_c = s.in_c / s.groups;
  p.filter_h = s.kernel_h;
  p.filter_w = s.kernel_w;

  const int64_t elem = static_cast<int64_t>(dtype_size(s.dtype));
  p.padded_bytes = p.explicit_pad.any() ? p.x_conv.elements() * elem : 0;
  p.filter_bytes = p.filter_elements() * elem;

  check_fits_int(what, p.x_conv);
  check_fits_int(what, p.y);
  check_fits_int(what, {p.filter_k, p.filter_c, p.filter_h, p.filter_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w,
                        p.groups, p.filter_c * p.filter_h * p.filter_w});
  ST_CHECK(p.cudnn_out_h() == s.out_h() && p.cudnn_out_w() == s.out_w(), what, ": the descriptors give an output of ",
           p.cudnn_out_h(), "x", p.cudnn_out_w(), ", the shape ", s.out_h(), "x", s.out_w());
  return p;
}

kernels::PoolGeometry CudnnPoolPlan::geometry() const {
  return {x.h,
          x.w,
          x.c,
          y.h,
          y.w,
          shape.kernel_h,
          shape.kernel_w,
          shape.stride_h,
          shape.stride_w,
          shape.pad_top,
          shape.pad_left,
          shape.count_include_pad};
}

CudnnPoolPlan plan_cudnn_pool(const PoolShape& s, bool deterministic) {
  s.validate();
  const std::string what = "cuDNN pooling " + s.to_string();
  CudnnPoolPlan p;
  p.shape = s;
  p.data_type = cudnn_type(s.dtype, what);
  p.x = nhwc_tensor(s.batch, s.channels, s.in_h, s.in_w);
  p.y = nhwc_tensor(s.batch, s.channels, s.out_h(), s.out_w());
  p.direct = s.pad_top != s.pad_bottom || s.pad_left != s.pad_right;
  if (s.kind == PoolKind::max)
    p.mode = deterministic ? CudnnPoolMode::max_deterministic : CudnnPoolMode::max;
  else
    p.mode = s.count_include_pad ? CudnnPoolMode::average_include_padding : CudnnPoolMode::average_exclude_padding;
  p.window_h = s.kernel_h;
  p.window_w = s.kernel_w;
  p.pad_h = s.pad_top;
  p.pad_w = s.pad_left;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  check_fits_int(what, p.x);
  check_fits_int(what, p.y);
  check_fits_int(what, {p.window_h, p.window_w, p.pad_h, p.pad_w, p.stride_h, p.stride_w});
  ST_CHECK(p.direct || (p.cudnn_out_h() == s.out_h() && p.cudnn_out_w() == s.out_w()), what,
           ": the descriptors give an output of ", p.cudnn_out_h(), "x", p.cudnn_out_w(), ", the shape ", s.out_h(),
           "x", s.out_w());
  return p;
}

std::string pool_choice_line(const CudnnPoolPlan& p) {
  if (p.direct) return p.shape.to_string() + ": direct kernels (asymmetric padding)";
  switch (p.mode) {
    case CudnnPoolMode::max:
      return p.shape.to_string() + ": cuDNN MAX";
    case CudnnPoolMode::max_deterministic:
      return p.shape.to_string() + ": cuDNN MAX_DETERMINISTIC";
    case CudnnPoolMode::average_exclude_padding:
      return p.shape.to_string() + ": cuDNN AVERAGE_COUNT_EXCLUDE_PADDING";
    case CudnnPoolMode::average_include_padding:
      return p.shape.to_string() + ": cuDNN AVERAGE_COUNT_INCLUDE_PADDING";
  }
  return p.shape.to_string();
}

CudnnBatchNormPlan plan_cudnn_batch_norm(const BatchNormShape& s, bool try_bf16) {
  s.validate();
  CudnnBatchNormPlan p;
  p.shape = s;
  p.cudnn = s.dtype == DType::f32 || s.dtype == DType::f16 || (try_bf16 && s.dtype == DType::bf16);
  if (!p.cudnn) return p;
  const std::string what = "cuDNN batch normalization " + s.to_string();
  p.data_type = cudnn_type(s.dtype, what);
  p.x = nhwc_tensor(s.batch, s.channels, s.spatial, 1);
  p.parameters = nhwc_tensor(1, s.channels, 1, 1);
  check_fits_int(what, p.x);
  return p;
}

std::string batch_norm_choice_line(const CudnnBatchNormPlan& p) {
  if (!p.cudnn) return p.shape.to_string() + ": scaletrain kernels (" + std::string(dtype_name(p.shape.dtype)) + ")";
  return p.shape.to_string() + ": cuDNN SPATIAL" +
         (p.shape.activation == Activation::relu ? ", ReLU kernels after" : "");
}

CudnnChoiceKey conv_choice_key(const ConvShape& shape, ConvDirection direction, const CudnnSelection& selection) {
  ConvShape problem = shape;
  problem.bias = false;  // added outside cuDNN
  std::ostringstream os;
  os << "conv " << conv_direction_name(direction) << " " << problem.to_string();
  if (shape.dtype == DType::f32) os << " tf32 " << selection.allow_tf32;
  return {os.str()};
}

namespace {

// a before b: both heuristic, by rank; otherwise the faster, then the smaller workspace, then the lower id.
bool better_candidate(const CudnnAlgoResult& a, const CudnnAlgoResult& b) {
  if (a.heuristic_rank >= 0 && b.heuristic_rank >= 0) return a.heuristic_rank < b.heuristic_rank;
  if (a.time_ms != b.time_ms) return a.time_ms < b.time_ms;
  if (a.workspace_bytes != b.workspace_bytes) return a.workspace_bytes < b.workspace_bytes;
  return a.algo < b.algo;
}

// Why the selection drops `c` ("" where it is allowed).
std::string why_dropped(const CudnnAlgoResult& c, CudnnType data, const CudnnSelection& selection) {
  if (!c.ok) return "did not run: " + (c.status.empty() ? std::string("failed") : c.status);
  if (!conv_math_allowed(c.math, data, selection.allow_tf32))
    return cudnn_math_name(c.math) + " math not allowed for " + cudnn_type_name(data) +
           (data == CudnnType::f32 && !selection.allow_tf32 ? " with train.allow_tf32 = false" : "");
  if (selection.deterministic && !c.deterministic) return "nondeterministic";
  if (c.workspace_bytes > selection.workspace_limit_bytes) return "needs " + mib(c.workspace_bytes) + " MiB of workspace";
  return "";
}

const CudnnAlgoResult* best_allowed(const std::vector<CudnnAlgoResult>& candidates, CudnnType data,
                                    const CudnnSelection& selection) {
  const CudnnAlgoResult* best = nullptr;
  for (const CudnnAlgoResult& c : candidates)
    if (why_dropped(c, data, selection).empty() && (!best || better_candidate(c, *best))) best = &c;
  return best;
}

}  // namespace

bool find_conv_algorithm(const std::vector<CudnnAlgoResult>& candidates, const ConvShape& shape,
                         const CudnnSelection& selection, CudnnAlgoResult& out) {
  const CudnnAlgoResult* best =
      best_allowed(candidates, cudnn_type(shape.dtype, "cuDNN convolution " + shape.to_string()), selection);
  if (best) out = *best;
  return best != nullptr;
}

CudnnAlgoResult choose_conv_algorithm(const std::vector<CudnnAlgoResult>& candidates, const ConvShape& shape,
                                      ConvDirection direction, const CudnnSelection& selection) {
  const CudnnType data = cudnn_type(shape.dtype, "cuDNN convolution " + shape.to_string());
  if (const CudnnAlgoResult* best = best_allowed(candidates, data, selection)) return *best;
  std::vector<std::string> dropped;
  int nondeterministic = 0, too_large = 0;
  for (const CudnnAlgoResult& c : candidates) {
    const std::string why = why_dropped(c, data, selection);
    dropped.push_back(c.name + " (" + why + ")");
    nondeterministic += why == "nondeterministic";
    too_large += why.rfind("needs ", 0) == 0;
  }
  std::ostringstream os;
  os << "conv " << conv_direction_name(direction) << " " << shape.to_string() << ": no "
     << (selection.deterministic ? "deterministic " : "") << "algorithm"
     << (data == CudnnType::f32 && !selection.allow_tf32 ? " without TF32" : "") << " within "
     << workspace_setting_text(selection.workspace_auto, selection.workspace_limit_bytes) << " among "
     << candidates.size() << " cuDNN candidates";
  if (!dropped.empty()) {
    os << ":";
    for (size_t i = 0; i < dropped.size(); ++i) os << (i ? "; " : " ") << dropped[i];
  }
  if (too_large)
    os << (selection.workspace_auto ? ". More free device memory (a smaller train.batch) may help"
                                    : ". run.cudnn_workspace_mb = auto or a larger value may help");
  if (nondeterministic) os << ". run.deterministic = false may help";
  ST_FAIL(os.str());
}

AlgorithmRecord conv_record(const ConvShape& shape, ConvDirection direction, const CudnnSelection& selection,
                            const CudnnAlgoResult& choice, const std::vector<CudnnAlgoResult>& heuristic,
                            const std::vector<CudnnAlgoResult>& timed) {
  AlgorithmRecord r;
  r.key = conv_choice_key(shape, direction, selection).text;
  r.op = "conv " + conv_direction_name(direction);
  ConvShape problem = shape;
  problem.bias = false;
  r.shape = problem.to_string();
  r.algo = choice.algo;
  r.name = choice.name;
  r.math = cudnn_math_name(choice.math);
  r.workspace_bytes = choice.workspace_bytes;
  r.deterministic = choice.deterministic;
  r.how = timed.empty() ? AlgorithmMode::heuristic : AlgorithmMode::timed;
  if (!timed.empty()) r.time_ms = choice.time_ms;
  CudnnAlgoResult first;
  if (!find_conv_algorithm(heuristic, shape, selection, first)) return r;
  r.heuristic_name = first.name;
  for (const CudnnAlgoResult& t : timed)
    if (t.ok && t.algo == first.algo && t.math == first.math) {
      r.heuristic_time_ms = t.time_ms;
      break;
    }
  return r;
}

CudnnAlgoResult conv_choice_of(const AlgorithmRecord& r) {
  CudnnAlgoResult c;
  c.algo = r.algo;
  c.name = r.name;
  c.math = parse_cudnn_math(r.math);
  c.workspace_bytes = r.workspace_bytes;
  c.deterministic = r.deterministic;
  c.time_ms = static_cast<float>(r.time_ms);
  return c;
}

}  // namespace scaletrain
