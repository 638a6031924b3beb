// Who reads which rows of a split when it is staged across ranks: one contiguous part per slot
// (data/node_groups.hpp), its boundaries on whole HDF5 chunks so that no chunk is read by two
// ranks; a node's part is its slots' parts together. read_part reads one part in large
// contiguous reads and counts its non-finite values.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/nonfinite_scan.hpp"

namespace scaletrain::data {

struct RowRange {
  int64_t start = 0, count = 0;
  int64_t end() const { return start + count; }
};

// slots + 1 row boundaries: slot s reads [b[s], b[s + 1]). Parts are as equal as whole chunks of
// `chunk` rows allow (a slot may get none when there are fewer chunks than slots).
std::vector<int64_t> slot_boundaries(int64_t rows, int slots, int64_t chunk);

// The rows of `slots` consecutive slots from `first` (a node's slots, or one slot's).
inline RowRange slots_part(const std::vector<int64_t>& bounds, int first, int slots = 1) {
  const int64_t b = bounds[static_cast<size_t>(first)], e = bounds[static_cast<size_t>(first + slots)];
  return RowRange{b, e - b};
}

// Rows [range.start, range.end()) of the split `info` describes: samples to `samples` (the range's
// first row at samples[0]) and labels to `labels`, about 8 MiB per read, each read a whole number
// of the file's chunks (so a compressed chunk is never decompressed twice). Each read's non-finite
// values are counted into `scan` on a second thread while the next read proceeds, the read still in
// the cache it shares (null: not counted; perf/bench_nonfinite_check compares). Returns the bytes read.
int64_t read_part(const DatasetFile& file, const DatasetInfo& info, RowRange range, uint8_t* samples, int32_t* labels,
                  NonFiniteScan* scan);

}  // namespace scaletrain::data
