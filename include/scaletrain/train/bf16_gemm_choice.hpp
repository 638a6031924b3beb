// run.cpu_bf16_gemm in a training run: how a bf16 model's GEMM-shaped operators (dense layers, 1x1
// convolutions) compute where the backend can run them two ways (Backend::bf16_gemm_tuning).
//   bf16 | f32  as set.
//   auto        a resumed run takes its checkpoint's choice (so that it continues bit for bit); else rank 0
//               times both ways at the model's shapes once (bounded) and every rank takes the faster.
//   FILE        another run's run.json: the choice it records.
// Rank 0 decides and broadcasts (train/rank0_choice.hpp, the mechanism run.cudnn_algorithms shares). The
// start-up line and run.json show the choice with its times; checkpoints record it.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scaletrain/backend/bf16_gemm_tuning.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

// The timing's bounds: rounds per shape and the seconds its later rounds may take in all.
inline constexpr int kBf16GemmProbeRounds = 3;
inline constexpr double kBf16GemmProbeBudgetS = 1.0;

struct Bf16GemmChoice {
  Bf16GemmCompute setting = Bf16GemmCompute::automatic;  // run.cpu_bf16_gemm
  Bf16GemmCompute compute = Bf16GemmCompute::bf16;       // what the GEMMs run: bf16 or f32
  std::string source;                                    // "set", "checkpoint", "file" or "timed"
  std::string pin_file;                                  // run.cpu_bf16_gemm = FILE
  // "timed", rank 0's: per shape, and summed over the model's ops (seconds of forward and backward).
  std::vector<Bf16GemmShapeTiming> timings;
  double bf16_s = 0, f32_s = 0;
  double probe_s = 0;  // the timing's wall time
};

// bf16 unless the f32 GEMMs take less time over the model's ops (each shape times its count); the sums
// into bf16_s and f32_s.
Bf16GemmCompute faster_bf16_gemm(const std::vector<Bf16GemmShapeTiming>& timings, double& bf16_s, double& f32_s);

// Collective. The choice every rank takes. With `pin_file`, rank 0 reads that run.json's choice; with
// auto, rank 0 calls `checkpoint_choice` ("bf16", "f32", or "" where the run does not resume or its
// checkpoint has none) and, where it gives "", `time`; an error in any is every rank's.
Bf16GemmChoice choose_bf16_gemm(comm::Communicator& comm, Bf16GemmCompute setting, const std::string& pin_file,
                                const std::function<std::string()>& checkpoint_choice,
                                const std::function<std::vector<Bf16GemmShapeTiming>()>& time);

// "bf16 GEMMs: run.cpu_bf16_gemm = auto -> f32 (timed at S shapes, N ops: oneDNN bf16 B ms, f32 on
// widened bf16 F ms per step, forward and backward; P ms)"; "(set)" or the checkpoint's choice otherwise.
std::string bf16_gemm_line(const Bf16GemmChoice& c);
nlohmann::json bf16_gemm_json(const Bf16GemmChoice& c);

}  // namespace scaletrain::train
