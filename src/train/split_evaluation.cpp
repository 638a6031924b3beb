// Sample-by-sample evaluation of a split (train/split_evaluation.hpp).
#include "scaletrain/train/split_evaluation.hpp"

#include <algorithm>
#include <cstdio>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/evaluation_record.hpp"

namespace scaletrain::train {

EvaluationMetrics summarize_records(const std::vector<SampleRecord>& records, int64_t classes) {
  EvaluationMetrics m;
  const auto c = static_cast<size_t>(classes);
  m.samples = static_cast<int64_t>(records.size());
  m.top_k = static_cast<int>(std::min<int64_t>(5, classes));
  m.class_samples.assign(c, 0);
  m.class_correct.assign(c, 0);
  m.confusion.assign(c, std::vector<int64_t>(c, 0));
  double loss_sum = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const SampleRecord& r = records[i];
    ST_CHECK(r.index == static_cast<int64_t>(i), "evaluation records: sample ", i, " expected, ", r.index, " found");
    ST_CHECK(r.label >= 0 && r.label < classes && r.prediction >= 0 && r.prediction < classes,
             "evaluation records: sample ", i, " has label ", r.label, " and prediction ", r.prediction, " of ", classes,
             " classes");
    const auto y = static_cast<size_t>(r.label);
    m.class_samples[y] += 1;
    m.confusion[y][static_cast<size_t>(r.prediction)] += 1;
    if (r.rank == 0) {
      m.top1_correct += 1;
      m.class_correct[y] += 1;
    }
    if (r.rank < m.top_k) m.topk_correct += 1;
    loss_sum += static_cast<double>(r.loss);
  }
  m.loss = m.samples ? loss_sum / static_cast<double>(m.samples) : 0.0;
  return m;
}

nlohmann::json evaluation_json(const EvaluationMetrics& m, const std::vector<std::string>& class_names) {
  nlohmann::json per_class = nlohmann::json::array();
  for (size_t k = 0; k < m.class_samples.size(); ++k) {
    const int64_t n = m.class_samples[k];
    per_class.push_back({{"class", k < class_names.size() ? class_names[k] : std::to_string(k)},
                         {"samples", n},
                         {"correct", m.class_correct[k]},
                         {"accuracy", n ? static_cast<double>(m.class_correct[k]) / static_cast<double>(n) : 0.0}});
  }
  return {{"samples", m.samples},
          {"top1", m.top1()},
          {"top1_correct", m.top1_correct},
          {"top_k", m.top_k},
          {"topk", m.topk()},
          {"topk_correct", m.topk_correct},
          {"loss", m.loss},
          {"per_class", per_class},
          {"confusion_matrix_rows", "label"},
          {"confusion_matrix", m.confusion}};
}

std::string evaluation_line(const EvaluationMetrics& m) {
  char line[192];
  std::snprintf(line, sizeof line, "%lld samples: top-1 %.4f%% (%lld), top-%d %.4f%% (%lld), loss %.6f",
                static_cast<long long>(m.samples), 100.0 * m.top1(), static_cast<long long>(m.top1_correct), m.top_k,
                100.0 * m.topk(), static_cast<long long>(m.topk_correct), m.loss);
  return line;
}

SampleRecorder::SampleRecorder(Backend& backend, int64_t rows, int64_t classes)
    : backend_(backend),
      classes_(classes),
      fields_(backend.empty({std::max<int64_t>(rows, 1), kernels::kEvaluationRecordFields}, DType::i32,
                            "evaluation records")),
      losses_(backend.empty({std::max<int64_t>(rows, 1)}, DType::f32, "evaluation losses")) {}

void SampleRecorder::record(const Tensor& logits, const Tensor& labels, const Tensor& row_losses, int64_t valid,
                            const std::vector<int64_t>& indices) {
  const auto done = static_cast<int64_t>(indices_.size());
  ST_CHECK(done + valid <= losses_.numel(), "evaluation records: room for ", losses_.numel(), " samples, ",
           done + valid, " recorded");
  launch_row_reductions(backend_.compute_stream(), "evaluation_record", kernels::plan_rows(valid, classes_),
                        kernels::EvaluationRecord{logits.device_data<float>(), labels.device_data<int32_t>(),
                                                  row_losses.device_data<float>(),
                                                  fields_.device_data<int32_t>() + done * kernels::kEvaluationRecordFields,
                                                  losses_.device_data<float>() + done, classes_});
  indices_.insert(indices_.end(), indices.begin(), indices.begin() + valid);
}

std::vector<SampleRecord> SampleRecorder::gather(comm::Communicator& comm) {
  const Tensor fields = backend_.download(fields_);
  const Tensor losses = backend_.download(losses_);
  std::vector<SampleRecord> mine(indices_.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    const int32_t* f = fields.data<int32_t>() + i * kernels::kEvaluationRecordFields;
    mine[i] = SampleRecord{indices_[i], f[0], f[1], f[2], losses.data<float>()[i]};
  }
  // Equal shares for the gather: every rank's padded to the longest.
  const auto n = static_cast<int64_t>(mine.size());
  std::vector<int64_t> counts(static_cast<size_t>(comm.size()));
  comm.allgather(&n, sizeof n, counts.data());
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  mine.resize(static_cast<size_t>(longest));
  std::vector<SampleRecord> all(comm.rank() == 0 ? static_cast<size_t>(longest * comm.size()) : 0);
  comm.gather(mine.data(), longest * static_cast<int64_t>(sizeof(SampleRecord)), all.data(), 0);
  if (comm.rank() != 0) return {};
  std::vector<SampleRecord> out;
  for (int r = 0; r < comm.size(); ++r)
    out.insert(out.end(), all.begin() + r * longest, all.begin() + r * longest + counts[static_cast<size_t>(r)]);
  std::sort(out.begin(), out.end(), [](const SampleRecord& a, const SampleRecord& b) { return a.index < b.index; });
  return out;
}

}  // namespace scaletrain::train
