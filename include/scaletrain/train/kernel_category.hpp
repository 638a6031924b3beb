// Kernel-name categories for run.profile = kernels: a GPU kernel's name (CUPTI's demangled one), a
// PyTorch operator's or a simulated work item's label maps to one of a fixed list of categories
// (convolution forward / backward data / backward filter, GEMM, normalization, ...), so that
// scaletrain's per-kernel times and PyTorch's profiler tables can be compared category by category.
// The rules are src/train/kernel_categories.tsv, embedded in the library at build time; the GPU
// kit's scripts/gpu-kit/kernel_categories.py reads the same file, so both sides group names alike.
#pragma once
#include <regex>
#include <string>
#include <vector>

namespace scaletrain::train {

// The categories in report order; the last is "other", the category of a name no rule matches.
const std::vector<std::string>& kernel_categories();

// The category of a name under the embedded rules (compiled on first use; thread-safe). The
// reference is to an element of kernel_categories().
const std::string& kernel_category(const std::string& name);

// Rules from the text of a kernel_categories.tsv: lines REGEX<TAB>CATEGORY, # comments and blank
// lines; the first rule whose regex is found in a name (case-insensitive) gives its category. A line
// without a tab, with a category not in kernel_categories() or with a regex std::regex refuses
// throws UserError naming `source` and the line.
class KernelCategoryRules {
 public:
  explicit KernelCategoryRules(const std::string& tsv, const std::string& source = "kernel_categories.tsv");

  const std::string& category(const std::string& name) const;
  // The categories the rules name, each once, in the order of kernel_categories().
  std::vector<std::string> named_categories() const;

 private:
  struct Rule {
    std::regex regex;
    int category;
  };
  std::vector<Rule> rules_;
};

}  // namespace scaletrain::train
