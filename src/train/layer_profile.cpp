// LayerProfile: events around layers and trainer phases, read once per measured step; profile.json
// and the table (train/layer_profile.hpp).
#include "scaletrain/train/layer_profile.hpp"

#include <algorithm>
#include <cstdio>

#include "scaletrain/core/error.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/kernel_category.hpp"

namespace scaletrain::train {

ProfileRequest parse_profile_request(const std::string& text) {
  ProfileRequest r;
  for (const std::string& item : config_list_items(text)) {
    if (item == "layers")
      r.layers = true;
    else if (item == "kernels")
      r.kernels = true;
    else
      ST_USER_CHECK(item == "none", "run.profile = '", text, "': '", item,
                    "' is not one of none, layers, kernels (a list: layers,kernels)");
  }
  return r;
}

LayerProfile::LayerProfile(Backend& backend, const nn::Model& model, ProfileRequest request)
    : backend_(backend), request_(request) {
  for (const auto& layer : model.layers()) {
    Row r;
    r.name = layer->name();
    r.type = layer->type();
    layers_.push_back(std::move(r));
  }
  if (request_.kernels) trace_ = backend_.make_kernel_trace(trace_unavailable_);
}

LayerProfile::~LayerProfile() = default;

void LayerProfile::begin_step(bool measured) {
  step_measured_ = measured;
  measuring_ = measured && request_.layers;
  if (measured && trace_ && !tracing_) {
    // The trace records what runs while it is on: the work queued before this step (the warm-up's,
    // an evaluation's) must have run first.
    backend_.synchronize();
    trace_->start();
    tracing_ = true;
  }
}

void LayerProfile::record(Timed& t, bool begin) {
  Stream& s = backend_.compute_stream();
  std::unique_ptr<Event>& e = begin ? t.begin : t.end;
  if (!e) e = backend_.make_event("profile");
  s.record(*e);
  if (!begin) t.recorded = true;
}

void LayerProfile::layer_begin(size_t layer, bool backward) {
  if (measuring_) record(backward ? layers_.at(layer).backward : layers_.at(layer).forward, true);
}

void LayerProfile::layer_end(size_t layer, bool backward) {
  if (measuring_) record(backward ? layers_.at(layer).backward : layers_.at(layer).forward, false);
}

LayerProfile::Row& LayerProfile::row(const std::string& name) {
  Row& r = extra_[name];
  if (r.name.empty()) {
    r.name = name;
    r.type = "trainer";
  }
  return r;
}

void LayerProfile::device_begin(const std::string& name, bool backward) {
  if (measuring_) record(backward ? row(name).backward : row(name).forward, true);
}

void LayerProfile::device_end(const std::string& name, bool backward) {
  if (measuring_) record(backward ? row(name).backward : row(name).forward, false);
}

void LayerProfile::add_host(const std::string& name, double seconds) {
  if (measuring_) row(name).forward_s += seconds;
}

void LayerProfile::harvest(Row& r) {
  auto read = [](Timed& t) {
    if (!t.recorded) return 0.0;
    t.recorded = false;
    return t.end->completion_time() - t.begin->completion_time();
  };
  r.forward_s += read(r.forward);
  r.backward_s += read(r.backward);
}

void LayerProfile::finish_step() {
  pause();
  if (measuring_) {
    backend_.compute_stream().synchronize();
    for (Row& r : layers_) harvest(r);
    for (auto& [name, r] : extra_) harvest(r);
  }
  if (step_measured_) ++steps_;
}

void LayerProfile::add_step_time(double seconds) {
  if (step_measured_) step_seconds_ += seconds;
  step_measured_ = measuring_ = false;
}

void LayerProfile::pause() {
  if (!tracing_) return;
  trace_->stop();  // synchronizes
  tracing_ = false;
  for (const KernelRecord& k : trace_->take()) {
    KernelRecord& m = kernels_[k.name];
    m.name = k.name;
    m.count += k.count;
    m.seconds += k.seconds;
  }
}

std::vector<const LayerProfile::Row*> LayerProfile::sorted_rows() const {
  std::vector<const Row*> rows;
  for (const Row& r : layers_) rows.push_back(&r);
  for (const auto& [name, r] : extra_) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](const Row* a, const Row* b) {
    return a->forward_s + a->backward_s > b->forward_s + b->backward_s;
  });
  return rows;
}

nlohmann::json LayerProfile::kernels_json() {
  // The records of every measured step, per step.
  std::vector<KernelRecord> merged;
  for (const auto& [name, k] : kernels_) merged.push_back(k);
  std::sort(merged.begin(), merged.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.seconds > b.seconds; });
  const double steps = std::max<double>(1, static_cast<double>(steps_));
  std::map<std::string, std::pair<double, double>> per_category;  // seconds, kernels
  nlohmann::json per_step = nlohmann::json::array();
  for (const KernelRecord& k : merged) {
    const std::string& category = kernel_category(k.name);
    per_step.push_back({{"name", k.name}, {"category", category}, {"count", static_cast<double>(k.count) / steps},
                        {"seconds", k.seconds / steps}});
    per_category[category].first += k.seconds / steps;
    per_category[category].second += static_cast<double>(k.count) / steps;
  }
  nlohmann::json categories = nlohmann::json::array();
  for (const std::string& c : kernel_categories())
    categories.push_back({{"category", c}, {"seconds", per_category[c].first}, {"kernels", per_category[c].second}});
  return {{"source", trace_->source()}, {"per_step", per_step}, {"categories", categories}};
}

nlohmann::json LayerProfile::json(const std::string& model, const std::string& precision, int64_t batch_per_rank) {
  const double steps = std::max<double>(1, static_cast<double>(steps_));
  const double step_s = step_seconds_ / steps;
  nlohmann::json rows = nlohmann::json::array();
  double rows_s = 0;
  for (const Row* r : sorted_rows()) {
    const double total = (r->forward_s + r->backward_s) / steps;
    rows_s += total;
    rows.push_back({{"name", r->name}, {"type", r->type}, {"forward_s", r->forward_s / steps},
                    {"backward_s", r->backward_s / steps}, {"total_s", total},
                    {"share", step_s > 0 ? total / step_s : 0.0}});
  }
  nlohmann::json profile = {{"version", 1},
                            {"profile", nlohmann::json::array()},
                            {"device", std::string(device_name(backend_.device()))},
                            {"model", model},
                            {"precision", precision},
                            {"batch_per_rank", batch_per_rank},
                            {"measured_steps", steps_},
                            {"step_s", step_s},
                            {"rows_s", request_.layers ? rows_s : 0.0},
                            {"rows", request_.layers ? rows : nlohmann::json::array()}};
  if (request_.layers) profile["profile"].push_back("layers");
  if (request_.kernels) {
    profile["profile"].push_back("kernels");
    if (trace_)
      profile["kernels"] = kernels_json();
    else
      profile["kernels_unavailable"] = trace_unavailable_;
  }
  return profile;
}

std::string LayerProfile::table(size_t top) {
  if (!request_.layers) return {};
  const double steps = std::max<double>(1, static_cast<double>(steps_));
  const double step_ms = 1e3 * step_seconds_ / steps;
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-36s %-18s %10s %10s %10s %7s\n", "layer profile (per step)", "type",
                "fwd ms", "bwd ms", "total ms", "share");
  out += line;
  double sum_ms = 0, rest_ms = 0;
  size_t shown = 0, rest = 0;
  for (const Row* r : sorted_rows()) {
    const double f = 1e3 * r->forward_s / steps, b = 1e3 * r->backward_s / steps;
    sum_ms += f + b;
    if (shown < top) {
      std::snprintf(line, sizeof line, "%-36.36s %-18.18s %10.3f %10.3f %10.3f %6.1f%%\n", r->name.c_str(),
                    r->type.c_str(), f, b, f + b, step_ms > 0 ? 100 * (f + b) / step_ms : 0.0);
      out += line;
      ++shown;
    } else {
      rest_ms += f + b;
      ++rest;
    }
  }
  if (rest > 0) {
    std::snprintf(line, sizeof line, "%-36s %-18s %10s %10s %10.3f %6.1f%%\n",
                  (std::to_string(rest) + " more rows (profile.json)").c_str(), "", "", "", rest_ms,
                  step_ms > 0 ? 100 * rest_ms / step_ms : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "rows sum to %.3f ms of a %.3f ms step (%.1f%%) over %lld measured steps\n", sum_ms,
                step_ms, step_ms > 0 ? 100 * sum_ms / step_ms : 0.0, static_cast<long long>(steps_));
  out += line;
  return out;
}

}  // namespace scaletrain::train
