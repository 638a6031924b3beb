// A JSON document of the run directory (run.json, timeline.json, profile.json) written to a
// temporary name and renamed, so that a reader never sees half a file.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace scaletrain::train {

// `indent` as nlohmann::json::dump's (-1: one line). Error naming the file when it cannot be written.
void write_json_file(const std::string& path, const nlohmann::json& j, int indent);

}  // namespace scaletrain::train
