// A backend whose operators choose among algorithms (cuda: cuDNN convolutions, cuBLASLt GEMMs). A
// training run builds its model with the heuristic's choices, has rank 0 time every problem of the
// model (time_algorithms), and makes every rank run the book it broadcasts (pin_algorithms, then the
// model built again); a resumed or pinned run pins its book before the model is built
// (train/algorithm_choice.hpp). The book of what runs goes into run.json and checkpoints.
#pragma once
#include <string>

#include "scaletrain/backend/algorithm_book.hpp"

namespace scaletrain {

class AlgorithmTuning {
 public:
  virtual ~AlgorithmTuning() = default;
  // Ops made from now on take the heuristic's choice (AlgorithmMode::heuristic) or time their
  // candidates (timed).
  virtual void choose_algorithms(AlgorithmMode mode) = 0;
  // Ops made from now on run `book`'s records; one they may not run (or a problem the book lacks)
  // is an Error naming it and `from` ("run.cudnn_algorithms = FILE").
  virtual void pin_algorithms(AlgorithmBook book, std::string from) = 0;
  // Times the candidates of every problem of the ops made so far (each op made again in timed mode
  // and released), and returns the book of their fastest; ops made afterwards are as before.
  virtual AlgorithmBook time_algorithms() = 0;
  // What the ops made since the last choose_algorithms or pin_algorithms run.
  virtual AlgorithmBook algorithms() const = 0;
};

}  // namespace scaletrain
