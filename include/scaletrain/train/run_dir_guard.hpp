// run.dir protection: a run never writes over another run's files by accident. A run.dir holding
// what a run writes (config.toml, metrics.jsonl, run.json, timeline.json, mllog.log, checkpoints/)
// is refused unless run.resume continues that run, or run.overwrite moves the old directory aside
// to <run.dir>.<time> first (an old checkpoint left beside new ones could be resumed by mistake).
#pragma once
#include <string>

#include "scaletrain/train/config.hpp"

namespace scaletrain::train {

// Rank 0, before anything is written into run.dir. Returns where an earlier run was moved aside
// (run.overwrite), or "" when nothing was moved; throws UserError when run.dir holds another run's
// files and neither run.resume nor run.overwrite is set, naming the files and both ways on.
std::string prepare_run_dir(const RunConfig& cfg);

}  // namespace scaletrain::train
