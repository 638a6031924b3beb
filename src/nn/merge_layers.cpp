// Add and Concat on top of the kernels/merge.hpp functors.
#include "scaletrain/nn/merge_layers.hpp"

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/merge.hpp"

namespace scaletrain::nn {
namespace {

std::string shapes_string(const std::vector<Shape>& in) {
  std::string s;
  for (const Shape& x : in) s += (s.empty() ? "" : " and ") + shape_string(x);
  return s;
}
}  // namespace

Shape MergeLayer::configure(const Shape&) { shape_error("takes two or more inputs"); }
const Tensor& MergeLayer::forward(const Tensor&, bool) { shape_error("takes two or more inputs"); }
const Tensor& MergeLayer::backward(const Tensor&, bool) { shape_error("takes two or more inputs"); }

Shape Add::configure_inputs(const std::vector<Shape>& in) {
  for (const Shape& s : in)
    if (s != in.front()) shape_error("inputs must have one shape, got " + shapes_string(in));
  inputs_ = in.size();
  in_shape_ = out_shape_ = in.front();
  return out_shape_;
}

void Add::build(Backend& backend, int64_t batch) {
  y_ = buffer(with_batch(batch, out_shape_), "y");
  fused_bn_ = nullptr;  // until Model::build fuses again
}

const Tensor& Add::forward_inputs(const std::vector<const Tensor*>& x, bool training) {
  if (fused_bn_) {
    fused_bn_->forward_residual_relu(*x[1 - fused_input_], y_, training);
    return y_;
  }
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    for (size_t k = 1; k < x.size(); ++k) {
      const T* a = k == 1 ? x[0]->device_data<T>() : y_.device_data<T>();
      launch_elements(stream(), "add_forward", y_.numel(),
                      kernels::AddTensors<T>{a, x[k]->device_data<T>(), y_.device_data<T>()});
    }
  });
  return y_;
}

void Add::backward_inputs(const Tensor& dy, const std::vector<bool>& need_dx, std::vector<const Tensor*>& dx) {
  if (fused_bn_) {
    const size_t other = 1 - fused_input_;
    fused_bn_->backward_residual_relu(y_, dy, need_dx[other] ? &dresidual_ : nullptr);
    if (need_dx[fused_input_]) dx[fused_input_] = &dy;  // the BatchNorm's backward hands its dx on
    if (need_dx[other]) dx[other] = &dresidual_;
    return;
  }
  for (size_t k = 0; k < need_dx.size(); ++k)
    if (need_dx[k]) dx[k] = &dy;
}

void Add::fuse_batch_norm_relu(BatchNorm2d& bn, size_t bn_input) {
  ST_CHECK(inputs_ == 2 && bn_input < 2, "layer '", name_, "': only a two-input Add fuses with a BatchNorm");
  fused_bn_ = &bn;
  fused_input_ = bn_input;
  dresidual_ = buffer(y_.shape(), "residual gradient");
  bn.fuse_residual_relu();
}

int64_t Add::flops_per_sample() const { return static_cast<int64_t>(inputs_ - 1) * shape_numel(out_shape_); }

Shape Concat::configure_inputs(const std::vector<Shape>& in) {
  channels_.clear();
  for (const Shape& s : in) {
    const bool same_rest = s.size() == in.front().size() && !s.empty() &&
                           std::equal(s.begin(), s.end() - 1, in.front().begin());
    if (!same_rest) shape_error("inputs must agree in all but the last (channel) dimension, got " + shapes_string(in));
    channels_.push_back(s.back());
  }
  in_shape_ = in.front();
  out_shape_ = in.front();
  out_shape_.back() = 0;
  for (int64_t c : channels_) out_shape_.back() += c;
  return out_shape_;
}

void Concat::build(Backend& backend, int64_t batch) {
  y_ = buffer(with_batch(batch, out_shape_), "y");
  rows_ = y_.numel() / out_shape_.back();
  dx_.clear();
  for (size_t k = 0; k < channels_.size(); ++k) {
    Shape s = with_batch(batch, out_shape_);
    s.back() = channels_[k];
    dx_.push_back(buffer(s, "dx" + std::to_string(k)));
  }
}

// `channels` values of each row from src (rows of src_stride, at src_offset) to dst: a row's channels
// in packs on a device where the channel counts, strides and addresses allow.
template <class T>
void copy_channels(Stream& stream, const char* label, int64_t rows, int64_t channels, const T* src,
                   int64_t src_stride, int64_t src_offset, T* dst, int64_t dst_stride, int64_t dst_offset) {
  const bool packed = kernels::pack_fits<T>(channels, {src + src_offset, dst + dst_offset}) &&
                      src_stride % kernels::kChannelPack == 0 && dst_stride % kernels::kChannelPack == 0;
  launch_channel_packs<T, kernels::CopyChannels>(stream, label, rows, channels, packed, src, dst, src_stride,
                                                 src_offset, dst_stride, dst_offset);
}

const Tensor& Concat::forward_inputs(const std::vector<const Tensor*>& x, bool training) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    int64_t offset = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      copy_channels<T>(stream(), "concat_forward", rows_, channels_[k], x[k]->device_data<T>(), channels_[k], 0,
                       y_.device_data<T>(), out_shape_.back(), offset);
      offset += channels_[k];
    }
  });
  return y_;
}

void Concat::backward_inputs(const Tensor& dy, const std::vector<bool>& need_dx, std::vector<const Tensor*>& dx) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    int64_t offset = 0;
    for (size_t k = 0; k < need_dx.size(); ++k) {
      if (need_dx[k]) {
        copy_channels<T>(stream(), "concat_backward", rows_, channels_[k], dy.device_data<T>(), out_shape_.back(),
                         offset, dx_[k].device_data<T>(), channels_[k], 0);
        dx[k] = &dx_[k];
      }
      offset += channels_[k];
    }
  });
}

}  // namespace scaletrain::nn
