// The kernel-name categories (train/kernel_category.hpp): every recorded name of
// tests/data/kernel_names/*.tsv (PyTorch's CUDA kernels and CPU operators, scaletrain's cuda kernels
// and sim labels) gets its expected category, the category list and its order, the fallback to
// "other", that the embedded rules are those of src/train/kernel_categories.tsv and name every
// category, and the errors of a bad rules file. tests/kernel_categories.cmake runs the Python twin on
// the same lists.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scaletrain/train/kernel_category.hpp"
#include "support/test_harness.hpp"

using namespace scaletrain;
using namespace scaletrain::train;
using scaletrain::testing::error_of;

namespace {

const std::string kRulesPath = std::string(SCALETRAIN_SOURCE_DIR) + "/src/train/kernel_categories.tsv";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Recorded {
  std::string where, name, expected;
};

// The name<TAB>expected lines of a recorded list (# comments and blank lines skipped).
std::vector<Recorded> recorded(const std::string& list) {
  const std::string path = std::string(SCALETRAIN_TEST_DATA_DIR) + "/kernel_names/" + list;
  std::istringstream in(read_text(path));
  std::vector<Recorded> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << list << ":" << number << " has no tab";
    if (tab == std::string::npos) continue;
    out.push_back({list + ":" + std::to_string(number), line.substr(0, tab), line.substr(tab + 1)});
  }
  return out;
}

class RecordedNames : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedNames, GetTheirExpectedCategory) {
  const auto names = recorded(GetParam());
  EXPECT_GE(names.size(), 20u);
  for (const Recorded& r : names) EXPECT_EQ(kernel_category(r.name), r.expected) << r.where << ": " << r.name;
}

INSTANTIATE_TEST_SUITE_P(KernelNames, RecordedNames,
                         ::testing::Values("pytorch_cuda.tsv", "pytorch_cpu.tsv", "scaletrain_cuda.tsv",
                                           "scaletrain_sim.tsv"),
                         [](const auto& info) { return info.param.substr(0, info.param.find('.')); });

TEST(KernelCategories, AreTheElevenInReportOrder) {
  const std::vector<std::string> expected = {"convolution forward",
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
  EXPECT_EQ(kernel_categories(), expected);
}

TEST(KernelCategories, ANameNoRuleMatchesIsOther) {
  EXPECT_EQ(kernel_category("my_custom_kernel"), "other");
  EXPECT_EQ(kernel_category(""), "other");
  EXPECT_EQ(&kernel_category("my_custom_kernel"), &kernel_categories().back());
}

TEST(KernelCategories, EmbeddedRulesAreTheSourceFileAndNameEveryCategory) {
  const KernelCategoryRules file(read_text(kRulesPath), kRulesPath);
  // Every category has a rule ("other" too: autograd nodes, views) and the parser refuses any other.
  EXPECT_EQ(file.named_categories(), kernel_categories());
  for (const char* list : {"pytorch_cuda.tsv", "pytorch_cpu.tsv", "scaletrain_cuda.tsv", "scaletrain_sim.tsv"})
    for (const Recorded& r : recorded(list)) EXPECT_EQ(file.category(r.name), kernel_category(r.name)) << r.where;
}

TEST(KernelCategoryRules, FirstMatchWinsCaseInsensitively) {
  const KernelCategoryRules rules("# a comment\n\nbatch_norm\tnormalization\n  # indented comment\nnorm\tGEMM\n");
  EXPECT_EQ(rules.category("void at::native::Batch_Norm_collect"), "normalization");
  EXPECT_EQ(rules.category("layer_NORM"), "GEMM");
  EXPECT_EQ(rules.category("relu"), "other");
  EXPECT_EQ(rules.named_categories(), (std::vector<std::string>{"GEMM", "normalization"}));
}

TEST(KernelCategoryRules, ErrorsNameTheSourceAndLine) {
  EXPECT_NE(error_of([] {
              KernelCategoryRules("relu\telement-wise\n# c\nsgemm\tmatmul\n", "r.tsv");
            }).find("r.tsv:3: unknown category 'matmul'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              KernelCategoryRules("\nconv(\tconvolution forward\n", "r.tsv");
            }).find("r.tsv:2: bad regex 'conv('"),
            std::string::npos);
  EXPECT_NE(error_of([] { KernelCategoryRules("relu element-wise\n", "r.tsv"); }).find("r.tsv:1: expected REGEX<TAB>"),
            std::string::npos);
  EXPECT_NE(error_of([] { KernelCategoryRules("relu\telement-wise\tx\n", "r.tsv"); }).find("r.tsv:1: expected"),
            std::string::npos);
}

}  // namespace
