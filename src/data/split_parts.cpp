// Per-slot parts of a split and reading one (data/split_parts.hpp).
#include "scaletrain/data/split_parts.hpp"

#include <algorithm>
#include <future>

namespace scaletrain::data {

std::vector<int64_t> slot_boundaries(int64_t rows, int slots, int64_t chunk) {
  chunk = std::max<int64_t>(chunk, 1);
  const int64_t chunks = (rows + chunk - 1) / chunk;
  std::vector<int64_t> b(static_cast<size_t>(slots) + 1);
  for (int s = 0; s <= slots; ++s) b[static_cast<size_t>(s)] = std::min(rows, chunks * s / slots * chunk);
  return b;
}

int64_t read_part(const DatasetFile& file, const DatasetInfo& info, RowRange range, uint8_t* samples, int32_t* labels,
                  NonFiniteScan* scan) {
  const int64_t sample_values = shape_numel(info.sample_shape);
  const auto sample_bytes = static_cast<int64_t>(static_cast<size_t>(sample_values) * dtype_size(info.dtype));
  const int64_t chunk = std::max<int64_t>(info.chunk_samples, 1);
  const int64_t per_read = std::max<int64_t>(1, (int64_t{8} << 20) / sample_bytes / chunk) * chunk;
  // Each read is counted on a thread of its own while the next read proceeds.
  std::future<NonFiniteScan> counting;
  const auto counted = [&] {
    if (counting.valid()) scan->add(counting.get());
  };
  for (int64_t done = 0; done < range.count; done += per_read) {
    const int64_t n = std::min(per_read, range.count - done);
    uint8_t* dst = samples + done * sample_bytes;
    file.read_samples(info.split, range.start + done, n, dst);
    if (!scan || (info.dtype != DType::f32 && info.dtype != DType::f16)) continue;  // uint8 holds no NaN
    counted();
    counting = std::async(std::launch::async, [dst, n, sample_values, first = range.start + done, dtype = info.dtype] {
      return scan_samples(dst, dtype, n, sample_values, nullptr, first);
    });
  }
  counted();
  file.read_labels(info.split, range.start, range.count, labels);
  return range.count * (sample_bytes + static_cast<int64_t>(sizeof(int32_t)));
}

}  // namespace scaletrain::data
