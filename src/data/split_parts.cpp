// Per-slot parts of a split and reading one (data/split_parts.hpp).
#include "scaletrain/data/split_parts.hpp"

#include <algorithm>

namespace scaletrain::data {

std::vector<int64_t> slot_boundaries(int64_t rows, int slots, int64_t chunk) {
  chunk = std::max<int64_t>(chunk, 1);
  const int64_t chunks = (rows + chunk - 1) / chunk;
  std::vector<int64_t> b(static_cast<size_t>(slots) + 1);
  for (int s = 0; s <= slots; ++s) b[static_cast<size_t>(s)] = std::min(rows, chunks * s / slots * chunk);
  return b;
}

int64_t read_part(const DatasetFile& file, const std::string& split, RowRange range, size_t sample_bytes, int64_t chunk,
                  uint8_t* samples, int32_t* labels) {
  chunk = std::max<int64_t>(chunk, 1);
  const int64_t per_read =
      std::max<int64_t>(1, (int64_t{64} << 20) / static_cast<int64_t>(sample_bytes) / chunk) * chunk;
  for (int64_t done = 0; done < range.count; done += per_read) {
    const int64_t n = std::min(per_read, range.count - done);
    file.read_samples(split, range.start + done, n, samples + static_cast<size_t>(done) * sample_bytes);
  }
  file.read_labels(split, range.start, range.count, labels);
  return range.count * static_cast<int64_t>(sample_bytes + sizeof(int32_t));
}

}  // namespace scaletrain::data
