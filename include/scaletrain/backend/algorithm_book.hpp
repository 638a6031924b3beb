// A backend's algorithm choices (cuda: cuDNN's convolution algorithm per direction, cuBLASLt's GEMM
// algorithm per alignment variant): for each operator problem what runs, how it was chosen, and
// beside it the heuristic's first choice. Recorded in run.json and checkpoints and pinned into a
// later run (train/algorithm_choice.hpp), so that a resumed or pinned run computes bit for bit the
// same. Also the rules around it that need no GPU: the workspace allowed under
// run.cudnn_workspace_mb = auto, and when a pinned record is refused. Pure host code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace scaletrain {

// How operators made from now on choose their algorithms.
//   heuristic  the library's heuristic, untimed: its first candidate that the run's rules allow
//   timed      every candidate the rules allow is run and timed; the fastest wins
//   pinned     the record of the problem in a book from elsewhere (a checkpoint, another run.json)
enum class AlgorithmMode { heuristic, timed, pinned };
std::string algorithm_mode_name(AlgorithmMode m);

struct AlgorithmRecord {
  std::string key;    // the problem: direction, shape, types and math settings (not the workspace)
  std::string op;     // "conv fwd", "conv bwd data", "dense fwd", ...
  std::string shape;  // the operator's shape, for people
  int algo = -1;      // cuDNN: the algorithm's enum value; cuBLASLt: its heuristic rank
  std::string name;   // "IMPLICIT_PRECOMP_GEMM", "cuBLASLt #3 (tile 128x256, 1 split)"
  std::string math;   // cuDNN: cudnn_math_name; cuBLASLt: ""
  std::string config;  // cuBLASLt: the cublasLtMatmulAlgo_t as hex (the library's serializable form)
  int64_t workspace_bytes = 0;
  bool deterministic = true;
  AlgorithmMode how = AlgorithmMode::heuristic;  // how it was chosen: heuristic or timed
  double time_ms = -1;                           // timed: the choice's own time; else -1
  std::string heuristic_name;                    // the heuristic's first allowed candidate
  double heuristic_time_ms = -1;                 // its time in the same search; -1 when untimed
};

struct AlgorithmBook {
  std::string library;  // "cuDNN 9.19.0, cuBLAS 13.1.0"
  std::string device;   // the GPU's name
  std::vector<AlgorithmRecord> records;

  const AlgorithmRecord* find(const std::string& key) const;
  // Adds `r`, or replaces the record with its key.
  void put(AlgorithmRecord r);
  // Whether both books run the same algorithm for the same problems (key, algo, math, config).
  bool same_choices(const AlgorithmBook& other) const;
  // Sums over the records (time_ms and heuristic_time_ms; -1 where any record is untimed), and the
  // number of records whose choice is not the heuristic's first.
  double timed_ms() const;
  double heuristic_ms() const;
  int differ_from_heuristic() const;
};

// "conv fwd <shape>: IMPLICIT_PRECOMP_GEMM (timed T ms, the heuristic's first IMPLICIT_GEMM H ms;
// W MiB workspace, deterministic, fma math)": for the start-up log and operator_choices.
std::string algorithm_record_line(const AlgorithmRecord& r);

// run.cudnn_workspace_mb = auto: what an operator's algorithm may use is the device memory free at
// its choice (the driver's free memory, what the caching allocator holds unused, and the stream's
// workspace, which the algorithm would reuse) less a margin for what the run allocates later
// (optimizer state, gradient buckets, evaluation): a tenth of the device's memory, at least 1 GiB.
struct DeviceMemoryState {
  int64_t free_bytes = 0;              // cudaMemGetInfo's free
  int64_t cached_free_bytes = 0;       // held by the caching allocator, in use by nothing
  int64_t total_bytes = 0;             // cudaMemGetInfo's total
  int64_t stream_workspace_bytes = 0;  // the operator stream's workspace so far
};
int64_t workspace_margin_bytes(int64_t total_bytes);
int64_t auto_workspace_limit(const DeviceMemoryState& m);

// The workspace setting in messages: "run.cudnn_workspace_mb = 512", or "run.cudnn_workspace_mb =
// auto (1234.5 MiB free less the margin)".
std::string workspace_setting_text(bool automatic, int64_t limit_bytes);

// A pinned book's record of `key`, or an Error naming the problem and where the book came from
// (`from`: "run.cudnn_algorithms = FILE", "the resumed checkpoint DIR").
const AlgorithmRecord& pinned_record(const AlgorithmBook& book, const std::string& key, const std::string& what,
                                     const std::string& from);
// A pinned record this run may not run is refused with an Error naming the problem, the algorithm,
// the bytes it needs and the setting that helps: one that needs more workspace than the run allows
// (`needed_bytes` as the library reports it for this run's descriptors; a negative value: the
// library does not support it here), or a nondeterministic one under run.deterministic.
void check_pinned_record(const AlgorithmRecord& r, int64_t needed_bytes, int64_t limit_bytes, bool limit_auto,
                         bool deterministic, const std::string& from);

}  // namespace scaletrain
