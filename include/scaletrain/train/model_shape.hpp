// The input shape and class count a run's zoo model is built for: the data set's, which model.input and
// model.classes must match where they are set; with both keys set, no data set is needed (--summary).
// And the run's zoo model itself, with the model.* keys that shape it.
#pragma once
#include <memory>
#include <optional>

#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/synthetic_data.hpp"

namespace scaletrain::train {

// model.input and model.classes where both are set; nullopt where either is left to the data set.
std::optional<DatasetShape> configured_model_shape(const RunConfig& cfg);

// `data`, the data set's sample shape and class count, once model.input and model.classes, where set,
// are found to match it: a UserError naming both shapes (or counts) where one does not.
DatasetShape model_shape_for(const RunConfig& cfg, const DatasetShape& data);

// The zoo model model.name for `shape`, with model.classifier_width and model.dropout.
std::unique_ptr<nn::Model> make_run_model(const RunConfig& cfg, const DatasetShape& shape);

}  // namespace scaletrain::train
