// Synthetic training data for runs without a data set (data.path = "synthetic"): a learnable
// 10-class problem of 28x28x1 uint8 images (a fixed random template per class plus noise), packed
// once by rank 0 into an HDF5 file of the data-tools format, so it goes through the real loader.
#pragma once
#include <string>

#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/core/tensor.hpp"
#include "scaletrain/train/config.hpp"

namespace scaletrain::train {

// Collective: rank 0 writes the file if it is missing, every rank returns its path
// (<run.dir>/synthetic-<samples>-<seed>.h5, or under the temp directory without a run.dir).
std::string ensure_synthetic_dataset(const RunConfig& cfg, comm::Communicator& comm);

struct DatasetShape {
  Shape sample_shape;
  int64_t classes = 0;
};
// The per-sample shape and class count of the configured data set (without loading it).
DatasetShape dataset_shape(const RunConfig& cfg);

}  // namespace scaletrain::train
