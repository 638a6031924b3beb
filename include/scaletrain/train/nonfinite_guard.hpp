// The non-finite guard: train.on_nonfinite, what an fp32 or bf16 run does with a step whose loss or
// reduced gradients hold inf/NaN. Every rank skips such a step's update on the device; the host
// learns of it a step or more later (stop: the run then ends with a message naming that step and a
// non-zero exit; skip: the step is counted and training goes on). In fp16 the loss scaler owns
// such steps. Also the stop message: the step, the learning rate, the first layer with inf/NaN
// gradients and what to try. And the agreement on NaN/inf in streamed input batches.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/data/nonfinite_scan.hpp"
#include "scaletrain/nn/model.hpp"

namespace scaletrain::train {

enum class NonFinitePolicy { stop, skip };
NonFinitePolicy parse_nonfinite_policy(const std::string& name);  // throws Error naming the key
std::string nonfinite_policy_name(NonFinitePolicy policy);

// A parameter whose gradients hold inf/NaN.
struct NonFiniteParameter {
  std::string layer, parameter;
  int64_t nonfinite = 0, count = 0;
  int layers_affected = 0;  // layers with any inf/NaN gradient
};

// The first parameter, counting from the output (where backward starts), whose gradients hold
// inf/NaN: `slot_counts` has the count of each of the model's parameter slots (the device's verdict,
// train/device_step_state.hpp).
std::optional<NonFiniteParameter> first_nonfinite_gradient(const nn::Model& model, std::span<const double> slot_counts);

// What the stop message reports.
struct NonFiniteStep {
  int64_t step = 0;        // global step, from 0
  int64_t epoch = 0;       // from 0
  double lr = 0;
  int loss_rank = -1;      // the lowest rank whose loss was inf/NaN (-1: none)
  bool gradients = false;  // the reduced gradients held inf/NaN
  std::string precision;
};
std::string nonfinite_stop_message(const NonFiniteStep& s, const std::optional<NonFiniteParameter>& first);

// Collective: the ranks' scans of their input batches combined (values summed, the lowest first
// sample), the same on every rank.
data::NonFiniteScan agree_on_input_scan(comm::Communicator& comm, const data::NonFiniteScan& mine);

}  // namespace scaletrain::train
