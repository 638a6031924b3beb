// Phase names for the per-step timers.
#include "scaletrain/core/timer.hpp"

namespace scaletrain {

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::data_wait: return "data_wait";
    case Phase::h2d: return "h2d";
    case Phase::input: return "input";
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::allreduce_exposed: return "allreduce_exposed";
    case Phase::agree: return "agree";
    case Phase::optimizer: return "optimizer";
    case Phase::step: return "step";
    case Phase::count: break;
  }
  return "?";
}

}  // namespace scaletrain
