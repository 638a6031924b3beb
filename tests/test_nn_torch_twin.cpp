// The PyTorch twin's state_dict names and layouts (nn/torch_twin.hpp): names as nn.Sequential gives
// them for the zoo models of perf/pytorch_anchor.py, and the HWC -> CHW column order of the first
// Dense layer after a Flatten, checked element by element.
#include <gtest/gtest.h>

#include "scaletrain/nn/torch_twin.hpp"
#include "scaletrain/nn/zoo.hpp"

using namespace scaletrain;

namespace {

std::vector<std::string> names(const nn::Model& m) {
  std::vector<std::string> out;
  for (const auto& p : nn::torch_parameters(m)) out.push_back(p.name);
  return out;
}

TEST(TorchTwin, LenetNamesAreNnSequentials) {
  // Conv2d, ReLU, MaxPool2d, Conv2d, ReLU, MaxPool2d, Flatten, Linear, ReLU, Linear, ReLU, Linear
  auto m = nn::make_zoo_model("lenet", {28, 28, 1}, 10);
  EXPECT_EQ(names(*m), (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias",
                                                 "9.weight", "9.bias", "11.weight", "11.bias"}));
  const auto params = nn::torch_parameters(*m);
  EXPECT_EQ(params[4].hwc, (Shape{5, 5, 16}));  // the first Linear after the Flatten
  EXPECT_TRUE(params[6].hwc.empty());
}

TEST(TorchTwin, SeparableConvolutionIsTwoModules) {
  auto m = nn::make_zoo_model("fmnist_sepcnn", {28, 28, 1}, 10);
  const auto n = names(*m);
  ASSERT_EQ(n.size(), 21u);
  // Conv2d 0, SELU 1, then depthwise 2 (no bias) and pointwise 3, SELU 4, MaxPool 5, ...
  EXPECT_EQ(n[0], "0.weight");
  EXPECT_EQ(n[2], "2.weight");
  EXPECT_EQ(n[3], "3.weight");
  EXPECT_EQ(n[4], "3.bias");
  EXPECT_EQ(n[17], "21.weight");  // Linear(4608, 512) after the Flatten at 20
  EXPECT_EQ(n[20], "23.bias");
  EXPECT_EQ(nn::torch_parameters(*m)[17].hwc, (Shape{3, 3, 512}));
}

TEST(TorchTwin, DenseColumnsGoFromHwcToChw) {
  nn::TorchParameter p;
  p.name = "7.weight";
  p.shape = {2, 12};
  p.hwc = {2, 3, 2};  // H 2, W 3, C 2
  std::vector<float> ours(24), torch(24), back(24);
  // Our column (h*W + w)*C + c holds the value 100*c + 10*h + w (row r adds 1000*r).
  for (int r = 0; r < 2; ++r)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 3; ++w)
        for (int c = 0; c < 2; ++c) ours[r * 12 + (h * 3 + w) * 2 + c] = 1000.0f * r + 100.0f * c + 10.0f * h + w;
  nn::to_torch_layout(p, ours.data(), torch.data());
  // PyTorch's column (c*H + h)*W + w must hold the same element.
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 3; ++w)
          EXPECT_EQ(torch[r * 12 + (c * 2 + h) * 3 + w], 1000.0f * r + 100.0f * c + 10.0f * h + w);
  nn::from_torch_layout(p, torch.data(), back.data());
  EXPECT_EQ(back, ours);
}

}  // namespace
