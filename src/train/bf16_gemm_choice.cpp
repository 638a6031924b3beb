// run.cpu_bf16_gemm resolved for a run (train/bf16_gemm_choice.hpp).
#include "scaletrain/train/bf16_gemm_choice.hpp"

#include <cstdint>
#include <cstdio>

#include "scaletrain/core/error.hpp"
#include "scaletrain/train/pinned_choice.hpp"
#include "scaletrain/train/rank0_choice.hpp"

namespace scaletrain::train {

Bf16GemmCompute faster_bf16_gemm(const std::vector<Bf16GemmShapeTiming>& timings, double& bf16_s, double& f32_s) {
  bf16_s = f32_s = 0;
  for (const Bf16GemmShapeTiming& t : timings) {
    bf16_s += t.count * t.bf16_s;
    f32_s += t.count * t.f32_s;
  }
  return f32_s < bf16_s ? Bf16GemmCompute::f32 : Bf16GemmCompute::bf16;
}

Bf16GemmChoice choose_bf16_gemm(comm::Communicator& comm, Bf16GemmCompute setting, const std::string& pin_file,
                                const std::function<std::string()>& checkpoint_choice,
                                const std::function<std::vector<Bf16GemmShapeTiming>()>& time) {
  Bf16GemmChoice c;
  c.setting = setting;
  c.pin_file = pin_file;
  if (setting != Bf16GemmCompute::automatic && pin_file.empty()) {
    c.compute = setting;
    c.source = "set";
    return c;
  }
  std::vector<ChoiceSource> sources;
  if (!pin_file.empty()) {
    sources.push_back({"file", [&] {
                         const nlohmann::json j = read_pinned_choice(pin_file, "run.cpu_bf16_gemm", "cpu_bf16_gemm");
                         const std::string compute = j.value("compute", "");
                         ST_USER_CHECK(compute == "bf16" || compute == "f32", "run.cpu_bf16_gemm = ", pin_file,
                                       ": operators.cpu_bf16_gemm.compute is '", compute, "', not bf16 or f32");
                         return compute;
                       }});
  } else {
    sources.push_back({"checkpoint", checkpoint_choice});
    sources.push_back({"timed", [&] {
                         c.timings = time();
                         return bf16_gemm_compute_name(faster_bf16_gemm(c.timings, c.bf16_s, c.f32_s));
                       }});
  }
  const Rank0Choice r = choose_on_rank0(comm, sources);
  c.compute = parse_bf16_gemm_compute(r.text);
  c.source = r.source;
  c.probe_s = r.seconds;
  return c;
}

std::string bf16_gemm_line(const Bf16GemmChoice& c) {
  std::string line = "bf16 GEMMs: run.cpu_bf16_gemm = " + bf16_gemm_compute_name(c.setting) + " -> " +
                     bf16_gemm_compute_name(c.compute);
  if (c.source == "set") return line + " (set)";
  if (c.source == "file")
    return "bf16 GEMMs: run.cpu_bf16_gemm = " + c.pin_file + " -> " + bf16_gemm_compute_name(c.compute) +
           " (as that run computed)";
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
  nlohmann::json j = {{"setting", c.pin_file.empty() ? bf16_gemm_compute_name(c.setting) : c.pin_file},
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
