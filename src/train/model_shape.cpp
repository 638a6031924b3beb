// model.input and model.classes against the data set (train/model_shape.hpp).
#include "scaletrain/train/model_shape.hpp"

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {

std::optional<DatasetShape> configured_model_shape(const RunConfig& cfg) {
  if (cfg.model_input.empty() || cfg.model_classes == 0) return std::nullopt;
  return DatasetShape{cfg.model_input, cfg.model_classes};
}

DatasetShape model_shape_for(const RunConfig& cfg, const DatasetShape& data) {
  ST_USER_CHECK(cfg.model_input.empty() || cfg.model_input == data.sample_shape, "model.input is ",
                shape_string(cfg.model_input), " but the samples of the data set (data.path = ", cfg.data_path,
                ") are ", shape_string(data.sample_shape),
                ": leave model.input unset to build the model for the data set's shape");
  ST_USER_CHECK(cfg.model_classes == 0 || cfg.model_classes == data.classes, "model.classes is ", cfg.model_classes,
                " but the data set (data.path = ", cfg.data_path, ") has ", data.classes,
                " classes: leave model.classes unset to build the model for the data set's");
  return data;
}

std::unique_ptr<nn::Model> make_run_model(const RunConfig& cfg, const DatasetShape& shape) {
  nn::ZooOptions o;
  o.classes = shape.classes;
  o.classifier_width = cfg.classifier_width;
  o.dropout = static_cast<float>(cfg.dropout);
  o.stem_stride = cfg.stem_stride;
  o.vit = {cfg.vit_image_size, cfg.vit_patch_size, cfg.vit_num_layers, cfg.vit_num_heads, cfg.vit_hidden_dim,
           cfg.vit_mlp_dim};
  return nn::make_zoo_model(cfg.model, shape.sample_shape, o);
}

}  // namespace scaletrain::train
