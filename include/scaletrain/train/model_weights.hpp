// A model's weights from a model.h5 (a checkpoint's, or one data-tools/st-import-torch wrote from a
// PyTorch state_dict): every dataset by its state_dict name, then matched to a built model by name
// and shape. run.init_from starts a run from them (the classifier re-initialized where the class
// count differs), run.evaluate_only and scaletrain-checkpoint evaluate them (an exact fit).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/nn/model.hpp"

namespace scaletrain::train {

// One dataset of a model.h5: f32 values, or int64 ones (num_batches_tracked).
struct NamedWeights {
  Shape shape;
  bool is_i64 = false;
  std::vector<float> f32;
  std::vector<int64_t> i64;
};

struct ModelWeights {
  std::string path;   // the model.h5 read
  std::string model;  // its `model` attr: the zoo name
  std::map<std::string, NamedWeights> tensors;
};

// The model.h5 that PATH names: the file itself, a checkpoint directory's, or a run directory's
// latest checkpoint's. A UserError naming `what` (the setting that gave it) and the path otherwise.
std::string resolve_model_file(const std::string& path, const std::string& what);

// Reads every dataset of a model.h5 (format_version 1). Error naming the file and dataset.
ModelWeights read_model_weights(const std::string& file);

// What loading kept from the file and what it left at the model's fresh initialization.
struct WeightsFit {
  std::vector<std::string> kept;           // "name [shape]"
  std::vector<std::string> reinitialized;  // "name: file [a, b], model [c, b]"
  int64_t kept_values = 0;
};

// Loads `w` into the built model on `backend` (parameters in our layouts, buffers, the compute
// copy refreshed). Every model tensor must be in the file with its shape and every file tensor in
// the model, except, with `new_classifier`, tensors whose shapes differ only in their first
// dimension where the model's is `classes` (the classifier of another class count): those keep the
// model's current values. Any other mismatch (missing, unexpected, wrong shape or type) is listed,
// all of them, in one UserError that names `what` and the file. Synchronizes the backend.
WeightsFit load_model_weights(Backend& backend, nn::Model& model, const ModelWeights& w, int64_t classes,
                              bool new_classifier, const std::string& what);

}  // namespace scaletrain::train
