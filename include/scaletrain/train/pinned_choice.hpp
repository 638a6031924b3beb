// run.cudnn_algorithms = FILE and run.cpu_bf16_gemm = FILE: another run's choice, read from the
// "operators" object of its run.json, so that a fresh run computes as that run did.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace scaletrain::train {

// operators[field] of the run.json at `path`. Error naming the setting ("run.cudnn_algorithms") and
// the file when it cannot be read, is not JSON, or has no such choice (null: that run had none).
nlohmann::json read_pinned_choice(const std::string& path, const std::string& setting, const std::string& field);

}  // namespace scaletrain::train
