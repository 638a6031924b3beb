// LayerProfile (run.profile = layers): the time of each layer's forward and backward, the loss, the
// optimizer, the exposed all-reduce and the input preparation, over the measured steps, under the
// summary's layer names. Device work is timed with events recorded on the compute stream around it
// (on cpu an event is the host clock at its record); host phases with the host clock. At the end of
// each measured step the profile synchronizes the compute stream once and reads its events, so a
// profiled run waits where an unprofiled one does not; without run.profile nothing is recorded.
// With run.profile = kernels the backend's KernelTrace records each kernel beside it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/nn/model.hpp"

namespace scaletrain::train {

// What run.profile asks for ("layers", "kernels", both, or none).
struct ProfileRequest {
  bool layers = false;
  bool kernels = false;
  bool any() const { return layers || kernels; }
};
ProfileRequest parse_profile_request(const std::string& text);  // "", "none", "layers", "kernels", "layers,kernels"

class LayerProfile final : public nn::LayerObserver {
 public:
  LayerProfile(Backend& backend, const nn::Model& model, ProfileRequest request);
  ~LayerProfile() override;

  // Opens a step; only measured steps are recorded.
  void begin_step(bool measured);
  void layer_begin(size_t layer, bool backward) override;
  void layer_end(size_t layer, bool backward) override;
  // A trainer row timed on the compute stream ("loss", "optimizer", "input", ...).
  void device_begin(const std::string& row, bool backward = false);
  void device_end(const std::string& row, bool backward = false);
  // A trainer row timed on the host ("data wait", the host's part of "agreement").
  void add_host(const std::string& row, double seconds);
  // Closes the step: waits for the compute stream, reads the step's events.
  void finish_step();
  // The step's wall time (after finish_step, which it includes).
  void add_step_time(double seconds);
  // Stops the kernel trace and keeps its records (at the end of a step, and before work that is not
  // a step: an evaluation); begin_step restarts it.
  void pause();

  // Why run.profile = kernels has no kernel trace on this backend ("" when it has one or was not asked).
  const std::string& kernel_trace_unavailable() const { return trace_unavailable_; }
  nlohmann::json json(const std::string& model, const std::string& precision, int64_t batch_per_rank);
  // The rows sorted by time, each with its share of the step; at most `top` rows, then a line for the
  // rest ("" without run.profile = layers).
  std::string table(size_t top);

 private:
  struct Timed {
    std::unique_ptr<Event> begin, end;
    bool recorded = false;
  };
  struct Row {
    std::string name, type;
    double forward_s = 0, backward_s = 0;
    Timed forward, backward;
  };
  Row& row(const std::string& name);
  void record(Timed& t, bool begin);
  void harvest(Row& r);
  std::vector<const Row*> sorted_rows() const;
  nlohmann::json kernels_json();

  Backend& backend_;
  ProfileRequest request_;
  std::vector<Row> layers_;               // one per model layer, in layers() order
  std::map<std::string, Row> extra_;      // the trainer's rows
  bool step_measured_ = false;  // the open step is past the warm-up
  bool measuring_ = false;      // and its layers are timed
  int64_t steps_ = 0;
  double step_seconds_ = 0;
  std::unique_ptr<KernelTrace> trace_;
  bool tracing_ = false;
  std::string trace_unavailable_;
  std::map<std::string, KernelRecord> kernels_;  // every measured step's records, by name
};

}  // namespace scaletrain::train
