// The input shape and class count a run's zoo model is built for: the data set's, which model.input and
// model.classes must match where they are set; with both keys set, no data set is needed (--summary).
#pragma once
#include <optional>

#include "scaletrain/train/config.hpp"
#include "scaletrain/train/synthetic_data.hpp"

namespace scaletrain::train {

// model.input and model.classes where both are set; nullopt where either is left to the data set.
std::optional<DatasetShape> configured_model_shape(const RunConfig& cfg);

// `data`, the data set's sample shape and class count, once model.input and model.classes, where set,
// are found to match it: a UserError naming both shapes (or counts) where one does not.
DatasetShape model_shape_for(const RunConfig& cfg, const DatasetShape& data);

}  // namespace scaletrain::train
