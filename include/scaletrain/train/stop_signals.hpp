// Stop signals: SIGUSR1 (Slurm's `--signal=B:USR1@<lead>`, the supported trigger), SIGTERM and
// SIGINT (Ctrl-C) ask the run to stop. A thread of their own records the signal; the ranks agree on it at
// the next step boundary (train/step_agreement.hpp), write a checkpoint and exit with
// kExitStoppedResumable. A second SIGINT ends the process at once (the default action).
#pragma once
#include <string>

namespace scaletrain::train {

// The exit code of a run stopped by a signal after its checkpoint was written: "stopped,
// resumable" (sysexits' EX_TEMPFAIL). jobs/slurm/train_requeue.sbatch requeues on it.
constexpr int kExitStoppedResumable = 75;

// Blocks SIGUSR1, SIGTERM and SIGINT in the calling thread (and so in every thread it starts later)
// and, once per process, starts the thread that takes them. Call it before any other thread
// starts: a thread that runs with them unblocked records them in a handler (SA_RESTART), on its
// own stack. Processes started afterwards inherit the blocked set unless they reset it (Open MPI's
// singleton daemon does).
void install_stop_signal_handlers();
// The first stop signal this process received (0: none). A signal sent to the process is
// recorded a moment after kill() returns, by the signal thread.
int received_stop_signal();
// Forgets a received signal (tests).
void clear_stop_signal();
// "SIGUSR1", "SIGTERM", or "signal N".
std::string signal_name(int signal);

}  // namespace scaletrain::train
