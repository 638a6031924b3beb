// run.cpu_bf16_gemm resolved for a run (train/bf16_gemm_choice.hpp).
#include "scaletrain/train/bf16_gemm_choice.hpp"

#include <cstdint>
#include <cstdio>

#include "scaletrain/core/timer.hpp"
#include "scaletrain/train/errors.hpp"

namespace scaletrain::train {

Bf16GemmCompute faster_bf16_gemm(const std::vector<Bf16GemmShapeTiming>& timings, double& bf16_s, double& f32_s) {
  bf16_s = f32_s = 0;
  for (const Bf16GemmShapeTiming& t : timings) {
    bf16_s += t.count * t.bf16_s;
    f32_s += t.count * t.f32_s;
  }
  return f32_s < bf16_s ? Bf16GemmCompute::f32 : Bf16GemmCompute::bf16;
}

Bf16GemmChoice choose_bf16_gemm(comm::Communicator& comm, Bf16GemmCompute setting,
                                const std::function<std::string()>& checkpoint_choice,
                                const std::function<std::vector<Bf16GemmShapeTiming>()>& time) {
  Bf16GemmChoice c;
  c.setting = setting;
  if (setting != Bf16GemmCompute::automatic) {
    c.compute = setting;
    c.source = "set";
    return c;
  }
  root_check(comm, [&] {
    const std::string saved = checkpoint_choice();
    if (!saved.empty()) {
      c.compute = parse_bf16_gemm_compute(saved);
      c.source = "checkpoint";
      return;
    }
    const double t0 = now_seconds();
    c.timings = time();
    c.compute = faster_bf16_gemm(c.timings, c.bf16_s, c.f32_s);
    c.probe_s = now_seconds() - t0;
    c.source = "timed";
  });
  int32_t compute = static_cast<int32_t>(c.compute);
  comm.broadcast(&compute, sizeof compute, 0);
  c.compute = static_cast<Bf16GemmCompute>(compute);
  if (comm.rank() != 0) c.source = "rank 0";
  return c;
}

std::string bf16_gemm_line(const Bf16GemmChoice& c) {
  std::string line = "bf16 GEMMs: run.cpu_bf16_gemm = " + bf16_gemm_compute_name(c.setting) + " -> " +
                     bf16_gemm_compute_name(c.compute);
  if (c.source == "set") return line + " (set)";
  if (c.source != "timed") return line + " (as the resumed checkpoint ran, so that it continues bit for bit)";
  int ops = 0;
  for (const Bf16GemmShapeTiming& t : c.timings) ops += t.count;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                " (timed at %zu shapes, %d ops: oneDNN bf16 %.3f ms, f32 on widened bf16 %.3f ms per step, forward "
                "and backward; %.0f ms)",
                c.timings.size(), ops, c.bf16_s * 1e3, c.f32_s * 1e3, c.probe_s * 1e3);
  return line + buf;
}

nlohmann::json bf16_gemm_json(const Bf16GemmChoice& c) {
  nlohmann::json j = {{"setting", bf16_gemm_compute_name(c.setting)},
                      {"compute", bf16_gemm_compute_name(c.compute)},
                      {"source", c.source}};
  if (c.source != "timed") return j;
  j["bf16_ms"] = c.bf16_s * 1e3;
  j["f32_ms"] = c.f32_s * 1e3;
  j["probe_ms"] = c.probe_s * 1e3;
  j["shapes"] = nlohmann::json::array();
  for (const Bf16GemmShapeTiming& t : c.timings)
    j["shapes"].push_back({{"shape", t.shape}, {"count", t.count}, {"bf16_ms", t.bf16_s * 1e3}, {"f32_ms", t.f32_s * 1e3}});
  return j;
}

}  // namespace scaletrain::train
