// join: list items in messages ("train, val").
#pragma once
#include <string>
#include <vector>

namespace scaletrain {

inline std::string join(const std::vector<std::string>& parts, const std::string& separator = ", ") {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace scaletrain
