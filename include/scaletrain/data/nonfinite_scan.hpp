// Non-finite sample values (NaN, inf) in float samples (f32, f16): counted as a split is staged
// (each read as it lands) and in each streamed batch, so that a file holding them is refused with
// an error naming the file, the split and the first bad sample, instead of training into inf/NaN
// gradients that look like a learning rate too large. uint8 samples hold none.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>

#include "scaletrain/core/dtype.hpp"

namespace scaletrain::data {

struct NonFiniteScan {
  int64_t values = 0;         // non-finite values seen
  int64_t first_sample = -1;  // the lowest index in the split of a sample holding one (-1: none)
  bool any() const { return values > 0; }
  void add(const NonFiniteScan& other);
};

// The non-finite values among `n` values of type `dtype` at `data`.
int64_t count_nonfinite(const void* data, DType dtype, int64_t n);

// `rows` samples of `sample_values` values each at `samples`; row r is sample indices[r] of the
// split, or first_index + r where indices is null.
NonFiniteScan scan_samples(const void* samples, DType dtype, int64_t rows, int64_t sample_values,
                           const int64_t* indices, int64_t first_index = 0);

// Collective over comm: the values summed, the lowest first sample; the same on every rank.
NonFiniteScan agree_on_nonfinite(MPI_Comm comm, const NonFiniteScan& mine);

// "PATH: split 'SPLIT' holds N non-finite value(s) (NaN or inf), the first in sample I; ..." with
// what to do. `where` narrows it ("the batch of step 37"), empty for a whole split.
std::string nonfinite_message(const std::string& path, const std::string& split, const NonFiniteScan& scan,
                              const std::string& where = "");

}  // namespace scaletrain::data
