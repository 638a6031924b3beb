// Counting NaN and inf in float samples (data/nonfinite_scan.hpp). A value is non-finite when its
// exponent bits are all ones; a sample is first tested with one max over its magnitudes' bits
// (vectorized), and only a sample that holds one is counted value by value.
#include "scaletrain/data/nonfinite_scan.hpp"

#include <algorithm>
#include <cstring>

#include "scaletrain/core/check_mpi.hpp"

namespace scaletrain::data {
namespace {

// The bit patterns of one float type: magnitude mask and the smallest non-finite magnitude.
template <class Bits, Bits kMagnitude, Bits kInfinity>
struct FloatBits {
  static bool any(const Bits* v, int64_t n) {
    Bits largest = 0;
    for (int64_t i = 0; i < n; ++i) largest = std::max<Bits>(largest, v[i] & kMagnitude);
    return largest >= kInfinity;
  }
  static int64_t count(const Bits* v, int64_t n) {
    int64_t c = 0;
    for (int64_t i = 0; i < n; ++i) c += (v[i] & kMagnitude) >= kInfinity ? 1 : 0;
    return c;
  }
  static int64_t nonfinite(const void* data, int64_t n) {
    const auto* v = static_cast<const Bits*>(data);
    return any(v, n) ? count(v, n) : 0;
  }
};
using F32Bits = FloatBits<uint32_t, 0x7fffffffu, 0x7f800000u>;
using F16Bits = FloatBits<uint16_t, 0x7fff, 0x7c00>;

}  // namespace

void NonFiniteScan::add(const NonFiniteScan& other) {
  if (!other.any()) return;
  first_sample = any() ? std::min(first_sample, other.first_sample) : other.first_sample;
  values += other.values;
}

int64_t count_nonfinite(const void* data, DType dtype, int64_t n) {
  switch (dtype) {
    case DType::f32: return F32Bits::nonfinite(data, n);
    case DType::f16: return F16Bits::nonfinite(data, n);
    default: return 0;
  }
}

NonFiniteScan scan_samples(const void* samples, DType dtype, int64_t rows, int64_t sample_values,
                           const int64_t* indices, int64_t first_index) {
  NonFiniteScan scan;
  if (dtype != DType::f32 && dtype != DType::f16) return scan;
  const size_t row_bytes = static_cast<size_t>(sample_values) * dtype_size(dtype);
  const auto* base = static_cast<const uint8_t*>(samples);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t bad = count_nonfinite(base + static_cast<size_t>(r) * row_bytes, dtype, sample_values);
    if (bad > 0) scan.add(NonFiniteScan{bad, indices ? indices[r] : first_index + r});
  }
  return scan;
}

NonFiniteScan agree_on_nonfinite(MPI_Comm comm, const NonFiniteScan& mine) {
  // The lowest first sample as a MAX over its negation (-1 for none is below every index's).
  int64_t v[2] = {mine.values, mine.any() ? -mine.first_sample : INT64_MIN};
  int64_t all[2] = {0, 0};
  ST_MPI_CHECK(MPI_Allreduce(&v[0], &all[0], 1, MPI_INT64_T, MPI_SUM, comm));
  ST_MPI_CHECK(MPI_Allreduce(&v[1], &all[1], 1, MPI_INT64_T, MPI_MAX, comm));
  return all[0] > 0 ? NonFiniteScan{all[0], -all[1]} : NonFiniteScan{};
}

std::string nonfinite_message(const std::string& path, const std::string& split, const NonFiniteScan& scan,
                              const std::string& where) {
  return path + ": split '" + split + "'" + (where.empty() ? "" : ", in " + where + ",") + " holds " +
         std::to_string(scan.values) + " non-finite value(s) (NaN or inf), the first in sample " +
         std::to_string(scan.first_sample) +
         ": scaletrain neither trains nor evaluates on NaN or inf (they make the loss and every gradient "
         "inf/NaN). Replace or drop those samples (st-info " + path + " counts them per split)";
}

}  // namespace scaletrain::data
