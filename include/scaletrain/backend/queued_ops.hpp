// Heavy operators wrapped so that each call is one device call (backend/device_counters.hpp),
// queued on the op's stream under a label for the kernel trace: on sim the stream's worker runs the
// host operator later; on cpu the inline stream runs it at once. The wrapped op's implementation name
// and its optional capabilities (a convolution taking over the pooling after it) pass through.
#pragma once
#include <memory>
#include <string>
#include <utility>

#include "scaletrain/backend/ops.hpp"
#include "scaletrain/backend/stream.hpp"

namespace scaletrain::queued_ops {

// Each call of a wrapped op is one call of the device (backend/device_counters.hpp), queued on the
// op's stream under a label for the kernel trace.
template <class F>
inline void queue_call(Stream& s, const char* label, F&& work) {
  s.counters().call();
  s.enqueue_kernel(label, std::forward<F>(work));
}

// The kernel-trace labels of a weighted op's three calls.
struct WeightedOpLabels {
  const char* forward;
  const char* backward_data;
  const char* backward_weights;
};
inline constexpr WeightedOpLabels kConvLabels{"conv forward", "conv backward_data", "conv backward_weights"};
inline constexpr WeightedOpLabels kInnerProductLabels{"inner product forward", "inner product backward_data",
                                               "inner product backward_weights"};

// Convolution and inner product share one interface shape (forward, backward_data,
// backward_weights): each call is queued on the op's stream.
template <class Op, const WeightedOpLabels& kLabels>
class QueuedWeightedOp : public Op {
 public:
  QueuedWeightedOp(std::unique_ptr<Op> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void forward(const void* x, const void* w, const float* b, void* y) override {
    queue_call(s_, kLabels.forward, [op = op_.get(), x, w, b, y] { op->forward(x, w, b, y); });
  }
  void backward_data(const void* dy, const void* w, void* dx) override {
    queue_call(s_, kLabels.backward_data, [op = op_.get(), dy, w, dx] { op->backward_data(dy, w, dx); });
  }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    queue_call(s_, kLabels.backward_weights, [op = op_.get(), x, dy, dw, db] { op->backward_weights(x, dy, dw, db); });
  }

 protected:
  std::unique_ptr<Op> op_;
  Stream& s_;
};

// A convolution's calls queued, its filter layout the wrapped op's (asked and set at build, before
// any call is queued).
class QueuedConvOp final : public QueuedWeightedOp<ConvOp, kConvLabels> {
 public:
  using QueuedWeightedOp::QueuedWeightedOp;
  FilterLayout filter_layout() const override { return op_->filter_layout(); }
  void take_filters_in(FilterLayout layout) override { op_->take_filters_in(layout); }
};

// The host backend's separable convolution (fused or composed, as on cpu), queued as one piece of work.
class QueuedSeparableConvOp final : public SeparableConvOp {
 public:
  QueuedSeparableConvOp(std::unique_ptr<SeparableConvOp> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void forward(const void* x, const void* w_dw, const void* w_pw, const float* b, void* mid, void* pre,
               void* y) override {
    queue_call(s_, "separable conv forward", [=, op = op_.get()] { op->forward(x, w_dw, w_pw, b, mid, pre, y); });
  }
  void backward(const void* x, const void* mid, const void* pre, const void* y, const void* dy, const void* w_dw,
                const void* w_pw, void* dpre, void* dmid, float* dw_dw, float* dw_pw, float* db, void* dx) override {
    queue_call(s_, "separable conv backward", [=, op = op_.get()] {
      op->backward(x, mid, pre, y, dy, w_dw, w_pw, dpre, dmid, dw_dw, dw_pw, db, dx);
    });
  }
  // At build, before any call of the op is queued: the host op takes the pooling over as on cpu.
  bool absorb_pool(const PoolShape& pool, void* pooled) override { return op_->absorb_pool(pool, pooled); }

 private:
  std::unique_ptr<SeparableConvOp> op_;
  Stream& s_;
};

// The host backend's activated convolution (fused or composed, as on cpu), queued as one piece of work.
class QueuedActivatedConvOp final : public ActivatedConvOp {
 public:
  QueuedActivatedConvOp(std::unique_ptr<ActivatedConvOp> op, Stream& s) : op_(std::move(op)), s_(s) {}
  // At build, before any call of the op is queued.
  FilterLayout filter_layout() const override { return op_->filter_layout(); }
  void take_filters_in(FilterLayout layout) override { op_->take_filters_in(layout); }
  void forward(const void* x, const void* w, const float* b, void* pre, void* y) override {
    queue_call(s_, "activated conv forward", [=, op = op_.get()] { op->forward(x, w, b, pre, y); });
  }
  void backward(const void* x, const void* pre, const void* y, const void* dy, const void* w, void* dpre, float* dw,
                float* db, void* dx) override {
    queue_call(s_, "activated conv backward", [=, op = op_.get()] { op->backward(x, pre, y, dy, w, dpre, dw, db, dx); });
  }
  // At build, before any call of the op is queued: the host op takes the pooling over as on cpu.
  bool absorb_pool(const PoolShape& pool, void* pooled) override { return op_->absorb_pool(pool, pooled); }

 private:
  std::unique_ptr<ActivatedConvOp> op_;
  Stream& s_;
};

class QueuedPoolOp final : public PoolOp {
 public:
  QueuedPoolOp(std::unique_ptr<PoolOp> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void forward(const void* x, void* y, bool training) override {
    queue_call(s_, "pool forward", [op = op_.get(), x, y, training] { op->forward(x, y, training); });
  }
  void backward(const void* dy, void* dx) override {
    queue_call(s_, "pool backward", [op = op_.get(), dy, dx] { op->backward(dy, dx); });
  }

 private:
  std::unique_ptr<PoolOp> op_;
  Stream& s_;
};

class QueuedMatmulOp final : public MatmulOp {
 public:
  QueuedMatmulOp(std::unique_ptr<MatmulOp> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void run(const void* a, const void* b, const float* bias, void* c, void* aux) override {
    queue_call(s_, "matmul", [=, op = op_.get()] { op->run(a, b, bias, c, aux); });
  }

 private:
  std::unique_ptr<MatmulOp> op_;
  Stream& s_;
};

// The host op queued on `stream` by a Queued*Op wrapper, which reports the host op's implementation.
template <class Wrapper, class Op>
std::unique_ptr<Wrapper> queued(std::unique_ptr<Op> host_op, Stream& stream) {
  std::string implementation = host_op->implementation();
  auto op = std::make_unique<Wrapper>(std::move(host_op), stream);
  op->set_implementation(std::move(implementation));
  return op;
}

// `op` wrapped, bound to `stream`.
inline std::unique_ptr<ConvOp> wrap(std::unique_ptr<ConvOp> op, Stream& stream) {
  return queued<QueuedConvOp>(std::move(op), stream);
}
inline std::unique_ptr<InnerProductOp> wrap(std::unique_ptr<InnerProductOp> op, Stream& stream) {
  return queued<QueuedWeightedOp<InnerProductOp, kInnerProductLabels>>(std::move(op), stream);
}
inline std::unique_ptr<PoolOp> wrap(std::unique_ptr<PoolOp> op, Stream& stream) {
  return queued<QueuedPoolOp>(std::move(op), stream);
}
inline std::unique_ptr<MatmulOp> wrap(std::unique_ptr<MatmulOp> op, Stream& stream) {
  return queued<QueuedMatmulOp>(std::move(op), stream);
}
inline std::unique_ptr<ActivatedConvOp> wrap(std::unique_ptr<ActivatedConvOp> op, Stream& stream) {
  return queued<QueuedActivatedConvOp>(std::move(op), stream);
}
inline std::unique_ptr<SeparableConvOp> wrap(std::unique_ptr<SeparableConvOp> op, Stream& stream) {
  return queued<QueuedSeparableConvOp>(std::move(op), stream);
}

}  // namespace scaletrain::queued_ops
