// torchvision 0.14's VisionTransformer: a patch embedding (conv_proj: a convolution of kernel and stride
// patch_size to hidden_dim channels), the patch grid as tokens in row order, the class token put first,
// the position embedding added, dropout; num_layers encoder blocks (ln_1, self-attention, dropout, the
// residual; ln_2, the MLP Linear-GELU-Dropout-Linear-Dropout, the residual); the final LayerNorm (eps
// 1e-6), the class token's channels, and heads.head. Node names are torchvision's module paths, so the
// state_dict keys are its own. Initialization follows torchvision where scaletrain has the draw:
// conv_proj (truncated normal of std sqrt(1 / fan_in): lecun_normal's), the position embedding
// (normal, std 0.02), the class token and the head (zeros), the MLP's weights (xavier uniform; its
// biases zeros, for torchvision's normal of std 1e-6). vit_tiny: 5,717,416 parameters at 224x224x3 and
// 1000 classes; vit_b_16: 86,567,656.
#include "scaletrain/core/error.hpp"
#include "scaletrain/nn/attention.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/layer_norm.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/token_layers.hpp"
#include "scaletrain/nn/zoo_networks.hpp"

namespace scaletrain::nn {
namespace {

struct VitArchitecture {
  int64_t patch, layers, heads, hidden, mlp;
};

std::string encoder_block(Model& m, const std::string& input, int i, const VitArchitecture& a, float dropout) {
  const std::string p = "encoder.layers.encoder_layer_" + std::to_string(i) + ".";
  std::string y = m.node<LayerNorm>({input}, p + "ln_1");
  y = m.node<MultiheadSelfAttention>({y}, p + "self_attention", a.heads, 0.0f);
  y = m.node<Dropout>({y}, p + "dropout", dropout);
  const std::string x = m.node<Add>({y, input}, p + "residual_1");
  y = m.node<LayerNorm>({x}, p + "ln_2");
  y = m.node<Dense>({y}, p + "mlp.0", a.mlp, Activation::gelu, true, Init::glorot_uniform);  // mlp.1: the GELU
  y = m.node<Dropout>({y}, p + "mlp.2", dropout);
  y = m.node<Dense>({y}, p + "mlp.3", a.hidden, Activation::none, true, Init::glorot_uniform);
  y = m.node<Dropout>({y}, p + "mlp.4", dropout);
  return m.node<Add>({y, x}, p + "residual_2");
}

void build_vision_transformer(Model& m, const ZooOptions& o, const VitArchitecture& a) {
  const Shape& in = o.input;
  ST_USER_CHECK(in.size() == 3 && in[0] % a.patch == 0 && in[1] % a.patch == 0, "model '", m.name(), "': the input ",
                shape_string(in), " must be [H, W, C] with H and W multiples of the patch size ", a.patch);
  ST_USER_CHECK(a.hidden % a.heads == 0, "model '", m.name(), "': hidden_dim ", a.hidden, " must divide into ",
                a.heads, " heads");
  const float dropout = o.dropout_or(0.0f);
  const int64_t grid = (in[0] / a.patch) * (in[1] / a.patch);
  std::string x = m.node<Conv2D>({Model::input()}, "conv_proj",
                                 Conv2DOptions{a.hidden, a.patch, a.patch, Padding::valid, 1, true, Activation::none},
                                 Init::lecun_normal);
  x = m.node<Reshape>({x}, "patch_tokens", Shape{grid, a.hidden});
  x = m.node<ClassToken>({x}, "class_token");
  x = m.node<PositionEmbedding>({x}, "encoder.pos_embedding");
  x = m.node<Dropout>({x}, "encoder.dropout", dropout);
  for (int i = 0; i < a.layers; ++i) x = encoder_block(m, x, i, a, dropout);
  x = m.node<LayerNorm>({x}, "encoder.ln");
  x = m.node<SelectToken>({x}, "class_token_output", 0);
  m.node<Dense>({x}, "heads.head", o.classes, Activation::none, true, Init::zeros);
}

constexpr VitArchitecture kVitTiny{16, 12, 3, 192, 768};

}  // namespace

void build_vit(Model& m, const ZooOptions& o) {
  const VitOptions& v = o.vit;
  const auto own = [](int64_t set, int64_t preset) { return set > 0 ? set : preset; };
  build_vision_transformer(m, o,
                           {own(v.patch_size, kVitTiny.patch), own(v.num_layers, kVitTiny.layers),
                            own(v.num_heads, kVitTiny.heads), own(v.hidden_dim, kVitTiny.hidden),
                            own(v.mlp_dim, kVitTiny.mlp)});
}

void build_vit_tiny(Model& m, const ZooOptions& o) { build_vision_transformer(m, o, kVitTiny); }

void build_vit_b_16(Model& m, const ZooOptions& o) { build_vision_transformer(m, o, {16, 12, 12, 768, 3072}); }

}  // namespace scaletrain::nn
