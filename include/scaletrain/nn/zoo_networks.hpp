// The zoo's builders, one network or family per file (src/nn/zoo_*.cpp): each adds its layers to an
// empty Model for ZooOptions; nn/zoo.hpp's table names them and configures the result.
#pragma once
#include <cstdint>

#include "scaletrain/nn/model.hpp"

namespace scaletrain::nn {

// torchvision's VisionTransformer arguments (model.vit.*); 0: the network's own (vit: vit_tiny's).
struct VitOptions {
  int64_t image_size = 0;  // set, it must equal the input's height and width
  int64_t patch_size = 0, num_layers = 0, num_heads = 0, hidden_dim = 0, mlp_dim = 0;
  bool any_architecture() const { return patch_size || num_layers || num_heads || hidden_dim || mlp_dim; }
};

struct ZooOptions {
  Shape input;  // the per-sample input [H, W, C] the model is configured for (make_zoo_model sets it)
  int64_t classes = 0;
  // The width of the hidden classifier layers where a network has them (vgg16: 4096); 0: the network's own.
  int64_t classifier_width = 0;
  // The classifier's dropout rate where a network has one (torchvision's dropout=: mobilenet_v2 0.2,
  // vgg16 and inception_v3 0.5); negative: the network's own.
  float dropout = -1.0f;
  // The stem convolution's stride where a network lets it change (mobilenet_v2: 2; 1 keeps small
  // images such as Fashion-MNIST's 28x28 from ending on 1x1 grids); 0: the network's own.
  int64_t stem_stride = 0;
  VitOptions vit;
  float dropout_or(float own) const { return dropout >= 0.0f ? dropout : own; }
  int64_t stem_stride_or(int64_t own) const { return stem_stride > 0 ? stem_stride : own; }
};

// zoo_small.cpp
void build_mlp(Model& m, const ZooOptions& o);
void build_lenet(Model& m, const ZooOptions& o);
void build_lenet_dropout(Model& m, const ZooOptions& o);
void build_fmnist_sepcnn(Model& m, const ZooOptions& o);
void build_resmlp(Model& m, const ZooOptions& o);
void build_branchnet(Model& m, const ZooOptions& o);
// zoo_resnet.cpp
void build_resnet20(Model& m, const ZooOptions& o);
void build_resnet18(Model& m, const ZooOptions& o);
void build_resnet50(Model& m, const ZooOptions& o);
// zoo_mobilenet_v2.cpp, zoo_vgg.cpp, zoo_inception_v3.cpp
void build_mobilenet_v2(Model& m, const ZooOptions& o);
void build_vgg16(Model& m, const ZooOptions& o);
void build_inception_v3(Model& m, const ZooOptions& o);
// zoo_vit.cpp: torchvision's VisionTransformer; vit takes model.vit.*, the presets are fixed.
void build_vit(Model& m, const ZooOptions& o);
void build_vit_tiny(Model& m, const ZooOptions& o);
void build_vit_b_16(Model& m, const ZooOptions& o);

}  // namespace scaletrain::nn
