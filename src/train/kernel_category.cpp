// The kernel-name rules: kernel_categories.tsv, embedded as a string by src/CMakeLists.txt
// (scaletrain_kernel_categories_tsv.hpp in the build tree), parsed and compiled once.
#include "scaletrain/train/kernel_category.hpp"

#include <algorithm>
#include <sstream>

#include "scaletrain/core/error.hpp"
#include "scaletrain_kernel_categories_tsv.hpp"

namespace scaletrain::train {

const std::vector<std::string>& kernel_categories() {
  static const std::vector<std::string> names = {"convolution forward",
                                                 "convolution backward data",
                                                 "convolution backward filter",
                                                 "GEMM",
                                                 "normalization",
                                                 "element-wise",
                                                 "reductions",
                                                 "optimizer",
                                                 "copies",
                                                 "communication",
                                                 "other"};
  return names;
}

KernelCategoryRules::KernelCategoryRules(const std::string& tsv, const std::string& source) {
  const auto& names = kernel_categories();
  std::istringstream in(tsv);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto tab = line.find('\t');
    ST_USER_CHECK(tab != std::string::npos && tab > 0 && line.find('\t', tab + 1) == std::string::npos, source, ":",
                  number, ": expected REGEX<TAB>CATEGORY, got '", line, "'");
    const std::string pattern = line.substr(0, tab), category = line.substr(tab + 1);
    const auto it = std::find(names.begin(), names.end(), category);
    ST_USER_CHECK(it != names.end(), source, ":", number, ": unknown category '", category, "'");
    try {
      rules_.push_back({std::regex(pattern, std::regex::ECMAScript | std::regex::icase | std::regex::optimize),
                        static_cast<int>(it - names.begin())});
    } catch (const std::regex_error& e) {
      ST_USER_FAIL(source, ":", number, ": bad regex '", pattern, "': ", e.what());
    }
  }
}

const std::string& KernelCategoryRules::category(const std::string& name) const {
  for (const Rule& r : rules_)
    if (std::regex_search(name, r.regex)) return kernel_categories()[r.category];
  return kernel_categories().back();
}

std::vector<std::string> KernelCategoryRules::named_categories() const {
  std::vector<std::string> out;
  for (const std::string& c : kernel_categories())
    if (std::any_of(rules_.begin(), rules_.end(), [&](const Rule& r) { return kernel_categories()[r.category] == c; }))
      out.push_back(c);
  return out;
}

const std::string& kernel_category(const std::string& name) {
  static const KernelCategoryRules rules(kKernelCategoriesTsv);
  return rules.category(name);
}

}  // namespace scaletrain::train
