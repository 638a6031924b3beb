// Weights from a model.h5 into a built model (train/model_weights.hpp).
#include "scaletrain/train/model_weights.hpp"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>

#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/data/hdf5_handles.hpp"
#include "scaletrain/nn/torch_twin.hpp"
#include "scaletrain/train/checkpoint.hpp"
#include "scaletrain/train/checkpoint_store.hpp"

namespace scaletrain::train {
namespace {

using data::H5Handle;

std::vector<std::string> dataset_names(hid_t file) {
  H5G_info_t info;
  ST_HDF5_CHECK(H5Gget_info(file, &info), "listing datasets");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t n = H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<size_t>(std::max<ssize_t>(n, 0)), '\0');
    H5Lget_name_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size() + 1, H5P_DEFAULT);
    names.push_back(name);
  }
  return names;
}

NamedWeights read_dataset(hid_t file, const std::string& name, const std::string& path) {
  H5Handle ds(ST_HDF5_CHECK(H5Dopen2(file, name.c_str(), H5P_DEFAULT), path, ": opening dataset ", name), H5Dclose);
  H5Handle space(H5Dget_space(ds.get()), H5Sclose);
  H5Handle type(H5Dget_type(ds.get()), H5Tclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  NamedWeights t;
  t.shape.assign(dims.begin(), dims.end());
  const auto n = static_cast<size_t>(H5Sget_simple_extent_npoints(space.get()));
  const H5T_class_t cls = H5Tget_class(type.get());
  ST_CHECK(cls == H5T_FLOAT || cls == H5T_INTEGER, path, ": dataset '", name, "' is neither floating point nor integer");
  t.is_i64 = cls == H5T_INTEGER;
  if (t.is_i64) {
    t.i64.resize(n);
    ST_HDF5_CHECK(H5Dread(ds.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.i64.data()), path,
                  ": reading ", name);
  } else {
    t.f32.resize(n);
    ST_HDF5_CHECK(H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.f32.data()), path,
                  ": reading ", name);
  }
  return t;
}

// One tensor the model expects: its name, shape and whether it is an int64 buffer.
struct Expected {
  std::string name;
  Shape shape;
  bool is_i64 = false;
};

std::vector<Expected> expected_tensors(const nn::Model& model) {
  std::vector<Expected> out;
  for (const nn::TorchParameter& p : nn::torch_parameters(model)) out.push_back({p.name, p.shape, false});
  for (const nn::BufferSlot& b : model.buffer_slots())
    out.push_back({b.name, model.layers()[b.layer]->buffers()[b.index].shape, b.dtype == DType::i64});
  return out;
}

// A classifier of another class count: the shapes differ in their first dimension only, the model's
// being `classes`.
bool other_classifier(const Shape& file, const Shape& model, int64_t classes) {
  return file.size() == model.size() && !model.empty() && model[0] == classes && file[0] != classes &&
         std::equal(file.begin() + 1, file.end(), model.begin() + 1);
}

std::vector<float> host_values(Backend& backend, const Tensor& t) {
  if (!t.defined()) return {};
  const Tensor h = backend.download(t);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

// The fit: which tensors are kept (their names also in `kept_names`), which stay re-initialized;
// every other mismatch listed.
WeightsFit fit_weights(const std::vector<Expected>& expected, const ModelWeights& w, int64_t classes,
                       bool new_classifier, std::set<std::string>& kept_names, std::vector<std::string>& problems) {
  WeightsFit fit;
  for (const Expected& e : expected) {
    const auto it = w.tensors.find(e.name);
    if (it == w.tensors.end()) {
      problems.push_back("missing: " + e.name + " " + shape_string(e.shape) + " (the model has it, the file not)");
      continue;
    }
    const NamedWeights& t = it->second;
    if (t.shape != e.shape) {
      if (new_classifier && other_classifier(t.shape, e.shape, classes))
        fit.reinitialized.push_back(e.name + ": file " + shape_string(t.shape) + ", model " + shape_string(e.shape));
      else
        problems.push_back("wrong shape: " + e.name + ": file " + shape_string(t.shape) + ", model expects " +
                           shape_string(e.shape));
      continue;
    }
    if (t.is_i64 != e.is_i64) {
      problems.push_back("wrong type: " + e.name + ": file " + (t.is_i64 ? "integer" : "floating point") + ", model " +
                         (e.is_i64 ? "int64" : "float32"));
      continue;
    }
    fit.kept.push_back(e.name + " " + shape_string(e.shape));
    kept_names.insert(e.name);
    fit.kept_values += static_cast<int64_t>(t.is_i64 ? t.i64.size() : t.f32.size());
  }
  std::set<std::string> model_names;
  for (const Expected& e : expected) model_names.insert(e.name);
  for (const auto& [name, t] : w.tensors)
    if (!model_names.contains(name))
      problems.push_back("unexpected: " + name + " " + shape_string(t.shape) + " (the file has it, the model not)");
  return fit;
}

}  // namespace

std::string resolve_model_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  ST_USER_CHECK(fs::exists(path), what, " ", path, ": no such file or directory");
  if (fs::is_regular_file(path)) return path;
  if (fs::exists(path + "/" + kCheckpointModelFile)) return path + "/" + kCheckpointModelFile;
  return resolve_checkpoint_path(path, what) + "/" + kCheckpointModelFile;
}

ModelWeights read_model_weights(const std::string& file) {
  std::lock_guard lock(data::hdf5_mutex());
  ST_USER_CHECK(H5Fis_hdf5(file.c_str()) > 0, file, " is not an HDF5 file (a model.h5: a checkpoint's, or one "
                "st-import-torch wrote)");
  H5Handle f(ST_HDF5_CHECK(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "opening ", file), H5Fclose);
  ST_USER_CHECK(data::has_attr(f.get(), "format_version") && data::has_attr(f.get(), "model"), file,
                " has no format_version and model attributes: not a scaletrain model.h5 (st-import-torch converts a "
                "PyTorch state_dict)");
  const int64_t v = data::read_int_attr(f.get(), "format_version");
  ST_USER_CHECK(v == kCheckpointFormatVersion, file, " has format_version ", v, "; this build reads ",
                kCheckpointFormatVersion);
  ModelWeights w;
  w.path = file;
  w.model = data::read_string_attr(f.get(), "model");
  for (const std::string& name : dataset_names(f.get())) w.tensors[name] = read_dataset(f.get(), name, file);
  return w;
}

WeightsFit load_model_weights(Backend& backend, nn::Model& model, const ModelWeights& w, int64_t classes,
                              bool new_classifier, const std::string& what) {
  ST_USER_CHECK(w.model == model.name(), what, " ", w.path, " holds model '", w.model, "', this run builds '",
                model.name(), "' (set model.name = ", w.model, ")");
  std::set<std::string> kept;
  std::vector<std::string> problems;
  const WeightsFit fit = fit_weights(expected_tensors(model), w, classes, new_classifier, kept, problems);
  if (!problems.empty()) {
    std::string msg = what + " " + w.path + " does not fit model " + model.name() + " (" + std::to_string(classes) +
                      " classes): " + std::to_string(problems.size()) + " mismatch(es):";
    for (const std::string& p : problems) msg += "\n  " + p;
    ST_USER_FAIL(msg);
  }
  // Parameters: the file's, through the twin's layout into ours, over the model's current values.
  std::vector<float> params = host_values(backend, model.flat_parameters());
  for (const nn::TorchParameter& p : nn::torch_parameters(model))
    if (kept.contains(p.name))
      nn::from_torch_layout(p, w.tensors.at(p.name).f32.data(), params.data() + model.slots()[p.slot].offset);
  backend.upload(model.flat_parameters(), params);
  model.refresh_compute_parameters();
  // Buffers.
  std::vector<float> f32 = host_values(backend, model.flat_buffers(DType::f32));
  Tensor& i64_flat = model.flat_buffers(DType::i64);
  Tensor i64 = i64_flat.defined() ? backend.download(i64_flat) : Tensor();
  for (const nn::BufferSlot& b : model.buffer_slots()) {
    if (!kept.contains(b.name)) continue;
    const NamedWeights& t = w.tensors.at(b.name);
    if (b.dtype == DType::i64) std::copy(t.i64.begin(), t.i64.end(), i64.data<int64_t>() + b.offset);
    else std::copy(t.f32.begin(), t.f32.end(), f32.begin() + b.offset);
  }
  if (!f32.empty()) backend.upload(model.flat_buffers(DType::f32), f32);
  if (i64.defined()) backend.copy_async(backend.compute_stream(), i64_flat, i64);
  backend.synchronize();
  return fit;
}

}  // namespace scaletrain::train
