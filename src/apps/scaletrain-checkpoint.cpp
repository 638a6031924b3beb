// scaletrain-checkpoint: what a checkpoint holds, the model's logits from it, and the state_dict a
// zoo model expects.
//
//   scaletrain-checkpoint info DIR
//       position, loss scaler, world size, identity keys, git commit, and every parameter and
//       optimizer buffer with its PyTorch name and shape. DIR: a checkpoint, or a run directory.
//   scaletrain-checkpoint logits PATH -o OUT.h5 [--data FILE] [--split test] [--count 32]
//       the first COUNT samples of the split, normalized as training does, through the model in
//       f32 on the CPU: OUT.h5 gets input [N, H, W, C] (f32, normalized), labels and logits
//       [N, classes]. Used to check that PyTorch computes the same logits from the checkpoint.
//       PATH: a checkpoint or run directory, or a model.h5 that st-import-torch wrote (with --data).
//   scaletrain-checkpoint layout --model NAME --input H,W,C --classes N [--set model.KEY=VALUE ...]
//       every tensor of the model's state_dict, one per line: "parameter|buffer NAME DIMS float32|int64"
//       (DIMS comma-separated, "-" for a scalar). st-import-torch checks a state_dict against it.
// Runs as one process (no mpirun needed).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/data/dataset_file.hpp"
#include "scaletrain/data/hdf5_handles.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/kernels/normalize.hpp"
#include "scaletrain/nn/torch_twin.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "scaletrain/train/checkpoint.hpp"
#include "scaletrain/train/checkpoint_store.hpp"
#include "scaletrain/train/config.hpp"
#include "scaletrain/train/model_shape.hpp"
#include "scaletrain/train/model_weights.hpp"
#include "scaletrain/train/synthetic_data.hpp"

using namespace scaletrain;

namespace {

std::string identity_value(const train::CheckpointMeta& m, const std::string& key) {
  for (const auto& [k, v] : m.identity)
    if (k == key) return v;
  ST_FAIL("the checkpoint records no ", key);
}

// The checkpoint's model, for the sample shape and classes of its data set (data.path), with the
// model keys it records (a checkpoint from before model.classifier_width, model.dropout,
// model.stem_stride and model.vit.* and model.vit.*: their defaults).
std::unique_ptr<nn::Model> model_for(const train::CheckpointMeta& m) {
  train::RunConfig cfg;
  cfg.data_path = identity_value(m, "data.path");
  cfg.model = identity_value(m, "model.name");
  for (const auto& [k, v] : m.identity)
    if (k == "model.classifier_width" || k == "model.dropout" || k == "model.stem_stride" || k.starts_with("model.vit."))
      train::find_config_key(k)->set(cfg, v);
  return train::make_run_model(cfg, train::dataset_shape(cfg));
}

// The zoo model NAME for INPUT ("H,W,C") and CLASSES, with architecture keys "model.KEY=VALUE".
std::unique_ptr<nn::Model> zoo_model(const std::string& name, const std::string& input, int64_t classes,
                                     const std::vector<std::string>& keys) {
  (void)nn::zoo_entry(name);  // an unknown name: the zoo's list
  train::RunConfig cfg;
  cfg.model = name;
  train::find_config_key("model.input")->set(cfg, input);
  cfg.model_classes = classes;
  for (const std::string& kv : keys) {
    const auto* key = train::find_config_key(kv.substr(0, kv.find('=')));
    ST_USER_CHECK(kv.find('=') != std::string::npos && key && kv.starts_with("model."), "model key '", kv,
                  "': expected model.KEY=VALUE");
    key->set(cfg, kv.substr(kv.find('=') + 1));
  }
  return train::make_run_model(cfg, *train::configured_model_shape(cfg));
}

// The model an imported model.h5 was written for (st-import-torch's attributes: model, input,
// classes, model_keys).
std::unique_ptr<nn::Model> model_for_import(const std::string& file) {
  std::string name, input;
  int64_t classes = 0;
  std::vector<std::string> keys;
  {
    std::lock_guard lock(data::hdf5_mutex());
    data::H5Handle f(ST_HDF5_CHECK(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "opening ", file), H5Fclose);
    ST_USER_CHECK(data::has_attr(f.get(), "model") && data::has_attr(f.get(), "input") &&
                      data::has_attr(f.get(), "classes"),
                  file, " records no model, input and classes: name a checkpoint or run directory, or a model.h5 "
                  "st-import-torch wrote");
    name = data::read_string_attr(f.get(), "model");
    input = data::read_string_attr(f.get(), "input");
    classes = data::read_int_attr(f.get(), "classes");
    if (data::has_attr(f.get(), "model_keys")) keys = data::read_string_array_attr(f.get(), "model_keys");
  }
  return zoo_model(name, input, classes, keys);
}

// The shape as "a,b,c" ("-" for a scalar).
std::string dims_text(const Shape& s) {
  std::string out;
  for (const int64_t d : s) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out.empty() ? "-" : out;
}

void print_layout(const std::string& name, const std::string& input, int64_t classes,
                  const std::vector<std::string>& keys) {
  const auto model = zoo_model(name, input, classes, keys);
  for (const nn::TorchParameter& p : nn::torch_parameters(*model))
    std::printf("parameter %s %s float32\n", p.name.c_str(), dims_text(p.shape).c_str());
  for (const nn::BufferSlot& b : model->buffer_slots())
    std::printf("buffer %s %s %s\n", b.name.c_str(), dims_text(model->layers()[b.layer]->buffers()[b.index].shape).c_str(),
                b.dtype == DType::i64 ? "int64" : "float32");
}

void print_info(const std::string& dir) {
  const train::CheckpointMeta m = train::read_checkpoint_meta(dir);
  std::printf("checkpoint %s\n", dir.c_str());
  std::printf("  position      step %lld (epoch %lld, step %lld of it)\n", static_cast<long long>(m.position.step),
              static_cast<long long>(m.position.epoch + 1), static_cast<long long>(m.position.step_in_epoch));
  std::printf("  written by    %d rank(s), global batch %lld, data.mode %s, git %s\n", m.world_size,
              static_cast<long long>(m.global_batch), m.data_mode.c_str(), m.git_commit.c_str());
  std::printf("  loss scaler   scale %g, %lld clean steps in a row, %lld skipped\n", m.loss_scale,
              static_cast<long long>(m.loss_scale_clean_steps), static_cast<long long>(m.skipped_steps));
  std::printf("  checksum      %016llx\n", static_cast<unsigned long long>(m.parameter_checksum));
  std::printf("  identity keys\n");
  for (const auto& [k, v] : m.identity) std::printf("    %-20s %s\n", k.c_str(), v.c_str());
  auto model = model_for(m);
  const train::CheckpointState s = train::read_checkpoint(dir, *model);
  std::printf("  model         %s, %lld parameters (PyTorch state_dict names)\n", model->name().c_str(),
              static_cast<long long>(model->parameter_count()));
  for (const nn::TorchParameter& p : nn::torch_parameters(*model))
    std::printf("    %-12s %-18s%s\n", p.name.c_str(), shape_string(p.shape).c_str(),
                p.hwc.empty() ? "" : "  (columns HWC -> CHW)");
  std::printf("  optimizer     %s, %lld steps, buffers:", s.optimizer.c_str(), static_cast<long long>(s.optimizer_steps));
  for (const auto& b : s.optimizer_buffer_names) std::printf(" %s", b.c_str());
  std::printf("\n");
}

void write_f32(hid_t file, const char* name, const Shape& shape, const void* values, hid_t mem_type, hid_t file_type) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  data::H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  data::H5Handle ds(ST_HDF5_CHECK(H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                  "creating ", name),
                    H5Dclose);
  ST_HDF5_CHECK(H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), "writing ", name);
}

// PATH: an imported model.h5 (its attributes give the model; --data is needed), or a checkpoint or
// run directory (its trainer.h5's identity keys and data set).
void write_logits(const std::string& path, std::string data_path, const std::string& split, int64_t count,
                  const std::string& out) {
  const bool imported = std::filesystem::is_regular_file(path);
  ST_USER_CHECK(!imported || !data_path.empty(), path, " is a model.h5 without a data set: give --data");
  std::unique_ptr<nn::Model> model;
  if (imported) {
    model = model_for_import(path);
  } else {
    const train::CheckpointMeta m = train::read_checkpoint_meta(path);
    if (data_path.empty()) data_path = identity_value(m, "data.path");
    model = model_for(m);
  }
  const std::string file_name = imported ? path : path + "/" + train::kCheckpointModelFile;
  const data::DatasetFile file(data_path, {"train", split});
  const data::DatasetInfo info = file.info(split);
  count = std::min(count, info.num_samples);
  BackendOptions bo;
  bo.kind = DeviceKind::cpu;
  bo.threads = 1;
  auto backend = make_backend(bo);
  model->build(*backend, count, DType::f32);
  // Parameters and buffers (BatchNorm's running statistics: evaluation normalizes with them).
  (void)train::load_model_weights(*backend, *model, train::read_model_weights(file_name),
                                  static_cast<int64_t>(info.classes.size()), false, "logits from");
  // The trainer's normalization: (x - mean) / std per channel.
  Shape in_shape{count};
  in_shape.insert(in_shape.end(), info.sample_shape.begin(), info.sample_shape.end());
  Tensor raw(in_shape, info.dtype, "samples"), x(in_shape, DType::f32, "input");
  std::vector<int32_t> labels(static_cast<size_t>(count));
  file.read_samples(split, 0, count, raw.raw());
  file.read_labels(split, 0, count, labels.data());
  const int64_t channels = info.sample_shape.back();
  std::vector<float> mean(static_cast<size_t>(channels), 0.0f), inv_std(static_cast<size_t>(channels), 1.0f);
  for (int64_t c = 0; c < channels && static_cast<int64_t>(info.std.size()) == channels; ++c) {
    mean[static_cast<size_t>(c)] = info.mean[static_cast<size_t>(c)];
    inv_std[static_cast<size_t>(c)] = info.std[static_cast<size_t>(c)] > 0 ? 1.0f / info.std[static_cast<size_t>(c)] : 1.0f;
  }
  const auto normalize = [&](auto stored) {
    using S = decltype(stored);
    kernels::launch_host("normalize", x.numel() / channels,
                         kernels::Normalize<S, float>{static_cast<const S*>(raw.raw()), x.data<float>(), mean.data(),
                                                      inv_std.data(), channels});
  };
  if (info.dtype == DType::u8) normalize(uint8_t{});
  else if (info.dtype == DType::f16) normalize(f16{});
  else normalize(float{});
  const Tensor logits = backend->download(model->forward(x, false));
  std::lock_guard lock(data::hdf5_mutex());
  data::H5Handle f(ST_HDF5_CHECK(H5Fcreate(out.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "creating ", out),
                   H5Fclose);
  write_f32(f.get(), "input", in_shape, x.raw(), H5T_NATIVE_FLOAT, H5T_IEEE_F32LE);
  write_f32(f.get(), "logits", logits.shape(), logits.raw(), H5T_NATIVE_FLOAT, H5T_IEEE_F32LE);
  write_f32(f.get(), "labels", {count}, labels.data(), H5T_NATIVE_INT32, H5T_STD_I32LE);
  data::write_string_attr(f.get(), "model", model->name());
  data::write_string_attr(f.get(), "checkpoint", path);
  std::printf("%s: logits of %lld samples of split '%s' of %s through %s\n", out.c_str(), static_cast<long long>(count),
              split.c_str(), data_path.c_str(), model->name().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  {
    kernels::KokkosScope kokkos;
    CLI::App app{"scaletrain-checkpoint: inspect a checkpoint, compute logits from it, or list a zoo model's state_dict"};
    app.require_subcommand(1);
    std::string dir, data_path, split = "test", out;
    int64_t count = 32, classes = 0;
    std::string model_name, input;
    std::vector<std::string> sets;
    auto* info = app.add_subcommand("info", "what a checkpoint holds");
    info->add_option("dir", dir, "checkpoint or run directory")->required();
    auto* logits = app.add_subcommand("logits", "the model's logits on the first samples of a split");
    logits->add_option("path", dir, "checkpoint or run directory, or an imported model.h5")->required();
    logits->add_option("-o,--out", out, "output HDF5 file")->required();
    logits->add_option("--data", data_path, "data set (default: the checkpoint's data.path)");
    logits->add_option("--split", split, "split (default: test)");
    logits->add_option("--count", count, "samples (default: 32)");
    auto* layout = app.add_subcommand("layout", "the state_dict a zoo model expects");
    layout->add_option("--model", model_name, "zoo model (model.name)")->required();
    layout->add_option("--input", input, "per-sample input H,W,C")->required();
    layout->add_option("--classes", classes, "classes")->required();
    layout->add_option("--set", sets, "model.KEY=VALUE (model.classifier_width, model.stem_stride, model.vit.*)");
    try {
      app.parse(argc, argv);
      data::quiet_hdf5_errors();
      if (*layout) print_layout(model_name, input, classes, sets);
      else if (*info) print_info(train::resolve_checkpoint_path(dir, "the DIR argument"));
      else
        write_logits(std::filesystem::is_regular_file(dir) ? dir : train::resolve_checkpoint_path(dir, "the PATH argument"),
                     data_path, split, count, out);
    } catch (const CLI::ParseError& e) {
      rc = app.exit(e);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "scaletrain-checkpoint: error: %s\n", e.what());
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
