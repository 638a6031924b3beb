// write_json_file: a temporary file, then a rename (train/json_file.hpp).
#include "scaletrain/train/json_file.hpp"

#include <filesystem>
#include <fstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {

void write_json_file(const std::string& path, const nlohmann::json& j, int indent) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    ST_CHECK(out.good(), "cannot write ", tmp);
    out << j.dump(indent) << "\n";
    ST_CHECK(out.good(), "error writing ", tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace scaletrain::train
