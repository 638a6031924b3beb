// run.cudnn_algorithms in a training run, on a backend whose operators choose among algorithms
// (backend/algorithm_tuning.hpp). Each step is collective, through the one mechanism of
// train/rank0_choice.hpp that run.cpu_bf16_gemm also takes:
//   before the model is built  a resumed run pins its checkpoint's book (unless a FILE is set), a
//                              FILE pins that run.json's book; otherwise the ops take the heuristic's
//   after it is built          with auto and nothing pinned, rank 0 times every problem of the model
//                              (the workspace rule then sees the model, its activations and the data
//                              ring allocated), and every rank pins rank 0's book and builds again
// The start-up line and run.json (operators.algorithms) show the book; checkpoints record it.
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "scaletrain/backend/algorithm_tuning.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

struct AlgorithmChoice {
  std::string setting;  // run.cudnn_algorithms as set: auto, heuristic or a path
  std::string source;   // "timed", "heuristic", "checkpoint" or "file"
  std::string from;     // the checkpoint's directory or the file
  double probe_s = 0;   // timed: rank 0's time choosing
  AlgorithmBook book;   // what the model's operators run
};

// The book as JSON and back (run.json's operators.algorithms.book, the checkpoint's attribute);
// `where` names the document in errors.
nlohmann::json algorithm_book_json(const AlgorithmBook& book);
AlgorithmBook algorithm_book_of_json(const nlohmann::json& j, const std::string& where);
nlohmann::json algorithm_choice_json(const AlgorithmChoice& c);
// "algorithms: run.cudnn_algorithms = auto -> timed on rank 0 (N problems, D not the heuristic's
// first; T ms against the heuristic's H ms, once per problem; P s)", and the like for the other sources.
std::string algorithm_choice_line(const AlgorithmChoice& c);

// Collective, before the model is built. `checkpoint_book`: on rank 0, the resumed checkpoint's
// directory and book as JSON text ({"", ""} where the run does not resume or the checkpoint has
// none). Returns whether a book was pinned (source "checkpoint" or "file").
bool pin_algorithms_before_build(comm::Communicator& comm, AlgorithmTuning& tuning, const std::string& setting,
                                 const std::function<std::pair<std::string, std::string>()>& checkpoint_book,
                                 AlgorithmChoice& choice);
// Collective, after the model is built: with auto and nothing pinned, rank 0 times and every rank
// pins its book. Returns whether the model must be built again (the book differs from what runs).
bool time_algorithms_after_build(comm::Communicator& comm, AlgorithmTuning& tuning, AlgorithmChoice& choice);

}  // namespace scaletrain::train
