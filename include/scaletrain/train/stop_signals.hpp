// Stop signals: SIGUSR1 (Slurm's `--signal=B:USR1@<lead>`, the supported trigger), SIGTERM and
// SIGINT (Ctrl-C) ask the run to stop. The handler only records the signal; the ranks agree on it at
// the next step boundary (train/step_agreement.hpp), write a checkpoint and exit with
// kExitStoppedResumable. A second SIGINT ends the process at once (the default action).
#pragma once
#include <string>

namespace scaletrain::train {

// The exit code of a run stopped by a signal after its checkpoint was written: "stopped,
// resumable" (sysexits' EX_TEMPFAIL). jobs/slurm/train_requeue.sbatch requeues on it.
constexpr int kExitStoppedResumable = 75;

// Installs the handlers of SIGUSR1, SIGTERM and SIGINT (SA_RESTART, so interrupted reads and waits
// go on).
void install_stop_signal_handlers();
// The first stop signal this process received (0: none).
int received_stop_signal();
// Forgets a received signal (tests).
void clear_stop_signal();
// "SIGUSR1", "SIGTERM", or "signal N".
std::string signal_name(int signal);

}  // namespace scaletrain::train
