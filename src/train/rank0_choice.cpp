// A choice made on rank 0 and broadcast (train/rank0_choice.hpp).
#include "scaletrain/train/rank0_choice.hpp"

#include <algorithm>
#include <cstdint>

#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/errors.hpp"

namespace scaletrain::train {

bool on_every_rank(comm::Communicator& comm, bool mine) {
  const int32_t flag = mine ? 1 : 0;
  std::vector<int32_t> all(static_cast<size_t>(comm.size()));
  comm.allgather(&flag, sizeof flag, all.data());
  return std::find(all.begin(), all.end(), 0) == all.end();
}

Rank0Choice choose_on_rank0(comm::Communicator& comm, const std::vector<ChoiceSource>& sources) {
  Rank0Choice c;
  root_check(comm, [&] {
    for (const ChoiceSource& s : sources) {
      const double t0 = now_seconds();
      std::string text = s.get();
      if (text.empty()) continue;
      c = {std::move(text), s.name, now_seconds() - t0};
      return;
    }
  });
  broadcast_string(comm, c.text, 0);
  broadcast_string(comm, c.source, 0);
  return c;
}

}  // namespace scaletrain::train
