// Another run's choice from its run.json (train/pinned_choice.hpp).
#include "scaletrain/train/pinned_choice.hpp"

#include <fstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {

nlohmann::json read_pinned_choice(const std::string& path, const std::string& setting, const std::string& field) {
  const std::string what = setting + " = " + path;
  std::ifstream in(path);
  ST_USER_CHECK(in.good(), what, ": cannot read the file (a run.json of an earlier run; or auto)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    ST_USER_FAIL(what, ": not a run.json (", e.what(), ")");
  }
  ST_USER_CHECK(j.is_object() && j.contains("operators") && j["operators"].is_object() &&
                    j["operators"].contains(field),
                what, ": the file has no operators.", field, " (a run.json of an earlier scaletrain run)");
  const nlohmann::json& choice = j["operators"][field];
  ST_USER_CHECK(!choice.is_null(), what, ": the run there made no such choice (operators.", field,
                " is null: another device, or another precision)");
  return choice;
}

}  // namespace scaletrain::train
