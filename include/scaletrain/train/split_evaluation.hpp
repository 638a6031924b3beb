// Evaluation of a split sample by sample (run.evaluate_only): every rank records its samples'
// label, prediction, label rank and loss on the device as its batches pass (no synchronization per
// batch), downloads them once, and rank 0 gathers them in sample order. From the records in that
// order: top-1, top-5, the mean loss, per-class accuracy and the confusion matrix, the same at any
// rank count (each sample counted once, the loss summed in sample order).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

struct SampleRecord {
  int64_t index = 0;  // in the split
  int32_t label = 0, prediction = 0;
  int32_t rank = 0;  // classes scoring above the label (0: a top-1 hit)
  float loss = 0;
};

struct EvaluationMetrics {
  int64_t samples = 0;
  int64_t top1_correct = 0, topk_correct = 0;
  int top_k = 5;      // 5, or the class count where there are fewer
  double loss = 0;    // mean over the samples
  std::vector<int64_t> class_samples, class_correct;  // by label
  std::vector<std::vector<int64_t>> confusion;       // [label][prediction]
  double top1() const { return samples ? static_cast<double>(top1_correct) / static_cast<double>(samples) : 0.0; }
  double topk() const { return samples ? static_cast<double>(topk_correct) / static_cast<double>(samples) : 0.0; }
};

// The metrics of records sorted by index, each index 0..n-1 once (Error otherwise).
EvaluationMetrics summarize_records(const std::vector<SampleRecord>& records, int64_t classes);

// eval.json's body (the caller adds what was evaluated) and the one summary line.
nlohmann::json evaluation_json(const EvaluationMetrics& m, const std::vector<std::string>& class_names);
std::string evaluation_line(const EvaluationMetrics& m);

// One rank's records of one pass, on the device until gather().
class SampleRecorder {
 public:
  // Room for `rows` samples of `classes` logits.
  SampleRecorder(Backend& backend, int64_t rows, int64_t classes);
  // The first `valid` rows of a batch (logits, device labels, the loss's per-row losses of the same
  // logits) and their indices in the split. Queued on the compute stream.
  void record(const Tensor& logits, const Tensor& labels, const Tensor& row_losses, int64_t valid,
              const std::vector<int64_t>& indices);
  // Collective: one download, then every rank's records on rank 0 sorted by index (empty elsewhere).
  std::vector<SampleRecord> gather(comm::Communicator& comm);

 private:
  Backend& backend_;
  int64_t classes_;
  Tensor fields_, losses_;  // i32 [rows, 3], f32 [rows]
  std::vector<int64_t> indices_;
};

}  // namespace scaletrain::train
