// The non-finite guard's policy names, the search for the first inf/NaN gradient, and the message.
#include "scaletrain/train/nonfinite_guard.hpp"

#include <cstdio>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {

NonFinitePolicy parse_nonfinite_policy(const std::string& name) {
  if (name == "stop") return NonFinitePolicy::stop;
  if (name == "skip") return NonFinitePolicy::skip;
  ST_FAIL("train.on_nonfinite must be stop or skip, got '", name, "'");
}

std::string nonfinite_policy_name(NonFinitePolicy policy) {
  return policy == NonFinitePolicy::stop ? "stop" : "skip";
}

std::optional<NonFiniteParameter> first_nonfinite_gradient(const nn::Model& model, std::span<const double> slot_counts) {
  ST_CHECK(slot_counts.size() == model.slots().size(), "inf/NaN counts for ", slot_counts.size(),
           " parameter tensors; the model has ", model.slots().size());
  std::optional<NonFiniteParameter> first;
  int layers_affected = 0;
  const auto& slots = model.slots();
  for (size_t layer = model.layers().size(); layer-- > 0;) {
    const nn::Layer& l = *model.layers()[layer];
    bool affected = false;
    for (size_t i = 0; i < l.parameters().size(); ++i) {
      const nn::ParameterSlot& s = slots[model.first_slot(layer) + i];
      const int64_t bad = static_cast<int64_t>(slot_counts[model.first_slot(layer) + i]);
      if (bad == 0) continue;
      affected = true;
      if (!first) first = NonFiniteParameter{l.name(), l.parameters()[i].name, bad, s.count, 0};
    }
    layers_affected += affected ? 1 : 0;
  }
  if (first) first->layers_affected = layers_affected;
  return first;
}

std::string nonfinite_stop_message(const NonFiniteStep& s, const std::optional<NonFiniteParameter>& first) {
  char head[256];
  std::snprintf(head, sizeof head, "inf/NaN at step %lld (epoch %lld, learning rate %g, %s): ",
                static_cast<long long>(s.step), static_cast<long long>(s.epoch + 1), s.lr, s.precision.c_str());
  std::string m = head;
  if (s.loss_rank >= 0) m += "the loss of rank " + std::to_string(s.loss_rank) + " is inf/NaN; ";
  if (first) {
    m += "the first layer with inf/NaN gradients, counting from the output, is " + first->layer + " (" +
         first->layer + "." + first->parameter + ": " + std::to_string(first->nonfinite) + " of " +
         std::to_string(first->count) + " values); " + std::to_string(first->layers_affected) +
         " layer(s) have inf/NaN gradients. ";
  } else if (s.gradients) {
    m += "the gradients hold inf/NaN on another rank. ";
  } else {
    m += "the gradients are finite. ";
  }
  m += "Every rank skipped this step's update, and the run stops. Try a smaller optimizer.lr (or a warm-up: "
       "optimizer.warmup_epochs), and check that the inputs are normalized (the data set's mean and std "
       "attributes, data-tools/). train.on_nonfinite = skip skips such steps instead and counts them.";
  return m;
}

data::NonFiniteScan agree_on_input_scan(comm::Communicator& comm, const data::NonFiniteScan& mine) {
  // The lowest first sample as a MAX over its negation.
  int64_t values = mine.values, first = mine.any() ? -mine.first_sample : INT64_MIN;
  comm.allreduce(&values, 1, DType::i64, comm::ReduceOp::sum);
  comm.allreduce(&first, 1, DType::i64, comm::ReduceOp::max);
  return values > 0 ? data::NonFiniteScan{values, -first} : data::NonFiniteScan{};
}

}  // namespace scaletrain::train
