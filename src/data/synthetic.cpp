// Synthetic data: sample i of class (i mod classes) = clamp(template[class] + noise), written in
// blocks so any size packs in bounded memory.
#include "scaletrain/data/synthetic.hpp"

#include <algorithm>
#include <cmath>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/data/dataset_writer.hpp"
#include "scaletrain/data/sharding.hpp"

namespace scaletrain::data {
namespace {
float unit(uint64_t& s) { return static_cast<float>(splitmix64(s) >> 40) * (1.0f / 16777216.0f); }
}  // namespace

void write_synthetic_dataset(const std::string& path, const SyntheticOptions& o) {
  ST_CHECK(o.classes >= 1, "synthetic data needs at least one class");
  ST_CHECK(o.train_samples > 0, "synthetic data needs training samples");
  ST_CHECK(o.test_samples >= 0, "negative test samples");
  std::vector<std::string> names;
  for (int64_t c = 0; c < o.classes; ++c) names.push_back("class" + std::to_string(c));
  DatasetWriter w(path, names, o.sample_shape, o.dtype, WriterOptions{1 << 20, o.gzip_level});
  const int64_t elems = shape_numel(o.sample_shape);
  // Templates in [0, 1).
  std::vector<float> templates(static_cast<size_t>(o.classes * elems));
  uint64_t ts = o.seed * 31 + 17;
  for (float& t : templates) t = unit(ts);
  const int64_t total = o.train_samples + o.test_samples;
  int64_t done = 0;
  for (const auto& [split, n] : {std::pair<std::string, int64_t>{"train", o.train_samples}, {"test", o.test_samples}}) {
    if (n == 0) continue;
    w.create_split(split, n, "synthetic (seed " + std::to_string(o.seed) + ")");
    const int64_t block = std::max<int64_t>(1, (int64_t{16} << 20) / (elems * static_cast<int64_t>(dtype_size(o.dtype))));
    std::vector<uint8_t> buf(static_cast<size_t>(block * elems) * dtype_size(o.dtype));
    std::vector<int32_t> labels(static_cast<size_t>(block));
    uint64_t ns = o.seed * 1000003 + (split == "train" ? 1 : 2);
    for (int64_t start = 0; start < n; start += block) {
      const int64_t cnt = std::min(block, n - start);
      for (int64_t i = 0; i < cnt; ++i) {
        const int64_t label = splitmix64(ns) % static_cast<uint64_t>(o.classes);
        labels[static_cast<size_t>(i)] = static_cast<int32_t>(label);
        const float* t = templates.data() + label * elems;
        for (int64_t e = 0; e < elems; ++e) {
          const float v = std::clamp(t[e] + o.noise * (2.0f * unit(ns) - 1.0f), 0.0f, 1.0f);
          const size_t k = static_cast<size_t>(i * elems + e);
          if (o.dtype == DType::u8) buf[k] = static_cast<uint8_t>(std::lround(v * 255.0f));
          else if (o.dtype == DType::f32) reinterpret_cast<float*>(buf.data())[k] = v;
          else reinterpret_cast<uint16_t*>(buf.data())[k] = float_to_f16(v).bits;
        }
      }
      w.write(split, start, cnt, buf.data(), labels.data());
      done += cnt;
      if (o.progress) o.progress(done, total);
    }
    if (split == "train") w.store_statistics("train");
  }
  w.finish();
}

}  // namespace scaletrain::data
