// The checkpoint files (train/checkpoint.hpp): writing, fsyncing and reading model.h5,
// optimizer.h5 and trainer.h5.
#include "scaletrain/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "scaletrain/core/check_hdf5.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/data/hdf5_handles.hpp"
#include "scaletrain/nn/torch_twin.hpp"

namespace scaletrain::train {
namespace {

using data::H5Handle;

std::string file_path(const std::string& dir, const char* file) { return dir + "/" + file; }

H5Handle create_file(const std::string& path) {
  return H5Handle(ST_HDF5_CHECK(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "creating checkpoint file ",
                                path),
                  H5Fclose);
}

H5Handle open_file(const std::string& path) {
  ST_CHECK(::access(path.c_str(), R_OK) == 0, "checkpoint file ", path, " is missing or unreadable");
  return H5Handle(ST_HDF5_CHECK(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "opening checkpoint file ", path),
                  H5Fclose);
}

void check_version(hid_t file, const std::string& path) {
  ST_CHECK(data::has_attr(file, "format_version"), "checkpoint file ", path, " has no format_version: not a checkpoint");
  const int64_t v = data::read_int_attr(file, "format_version");
  ST_CHECK(v == kCheckpointFormatVersion, "checkpoint file ", path, " has format_version ", v, "; this build reads ",
           kCheckpointFormatVersion);
}

// One f32 dataset per twin parameter under `group`, in the twin's layout.
void write_named_tensors(hid_t group, const std::vector<nn::TorchParameter>& params, const nn::Model& model,
                         const std::vector<float>& flat, const std::string& path) {
  std::vector<float> buf;
  for (const nn::TorchParameter& p : params) {
    const nn::ParameterSlot& slot = model.slots()[p.slot];
    buf.resize(static_cast<size_t>(slot.count));
    nn::to_torch_layout(p, flat.data() + slot.offset, buf.data());
    std::vector<hsize_t> dims(p.shape.begin(), p.shape.end());
    H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
    H5Handle ds(ST_HDF5_CHECK(H5Dcreate2(group, p.name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                         H5P_DEFAULT),
                              path, ": creating dataset ", p.name),
                H5Dclose);
    ST_HDF5_CHECK(H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), path,
                  ": writing dataset ", p.name);
  }
}

std::vector<float> read_named_tensors(hid_t group, const std::vector<nn::TorchParameter>& params,
                                      const nn::Model& model, const std::string& where) {
  std::vector<float> flat(static_cast<size_t>(model.parameter_count()));
  std::vector<float> buf;
  for (const nn::TorchParameter& p : params) {
    ST_CHECK(H5Lexists(group, p.name.c_str(), H5P_DEFAULT) > 0, where, " has no dataset '", p.name, "' (model ",
             model.name(), ")");
    H5Handle ds(ST_HDF5_CHECK(H5Dopen2(group, p.name.c_str(), H5P_DEFAULT), where, ": opening ", p.name), H5Dclose);
    H5Handle space(H5Dget_space(ds.get()), H5Sclose);
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    const Shape got(dims.begin(), dims.end());
    ST_CHECK(got == p.shape, where, ": dataset '", p.name, "' has shape ", shape_string(got), ", model ",
             model.name(), " expects ", shape_string(p.shape));
    const nn::ParameterSlot& slot = model.slots()[p.slot];
    buf.resize(static_cast<size_t>(slot.count));
    ST_HDF5_CHECK(H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), where,
                  ": reading ", p.name);
    nn::from_torch_layout(p, buf.data(), flat.data() + slot.offset);
  }
  return flat;
}

// The model's buffers, one dataset each under its name, beside the parameters (as a state_dict).
void write_buffers(hid_t file, const nn::Model& model, const CheckpointState& s, const std::string& path) {
  for (const nn::BufferSlot& b : model.buffer_slots()) {
    const Shape& shape = model.layers()[b.layer]->buffers()[b.index].shape;
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    H5Handle space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                   H5Sclose);
    const bool i64 = b.dtype == DType::i64;
    H5Handle ds(ST_HDF5_CHECK(H5Dcreate2(file, b.name.c_str(), i64 ? H5T_STD_I64LE : H5T_IEEE_F32LE, space.get(),
                                         H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                              path, ": creating dataset ", b.name),
                H5Dclose);
    const void* values = i64 ? static_cast<const void*>(s.buffers_i64.data() + b.offset)
                             : static_cast<const void*>(s.buffers_f32.data() + b.offset);
    ST_HDF5_CHECK(H5Dwrite(ds.get(), i64 ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
                  path, ": writing dataset ", b.name);
  }
}

void read_buffers(hid_t file, const nn::Model& model, CheckpointState& s, const std::string& path) {
  s.buffers_f32.assign(static_cast<size_t>(model.flat_buffers(DType::f32).numel()), 0.0f);
  s.buffers_i64.assign(static_cast<size_t>(model.flat_buffers(DType::i64).numel()), 0);
  for (const nn::BufferSlot& b : model.buffer_slots()) {
    ST_CHECK(H5Lexists(file, b.name.c_str(), H5P_DEFAULT) > 0, path, " has no dataset '", b.name, "' (model ",
             model.name(), ")");
    H5Handle ds(ST_HDF5_CHECK(H5Dopen2(file, b.name.c_str(), H5P_DEFAULT), path, ": opening ", b.name), H5Dclose);
    H5Handle space(H5Dget_space(ds.get()), H5Sclose);
    ST_CHECK(H5Sget_simple_extent_npoints(space.get()) == b.count, path, ": dataset '", b.name, "' holds ",
             H5Sget_simple_extent_npoints(space.get()), " values, model ", model.name(), " expects ", b.count);
    const bool i64 = b.dtype == DType::i64;
    void* values = i64 ? static_cast<void*>(s.buffers_i64.data() + b.offset)
                       : static_cast<void*>(s.buffers_f32.data() + b.offset);
    ST_HDF5_CHECK(H5Dread(ds.get(), i64 ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
                  path, ": reading ", b.name);
  }
}

void write_model(const std::string& path, const nn::Model& model, const CheckpointState& s) {
  H5Handle f = create_file(path);
  data::write_int_attr(f.get(), "format_version", kCheckpointFormatVersion);
  data::write_string_attr(f.get(), "model", model.name());
  write_named_tensors(f.get(), nn::torch_parameters(model), model, s.parameters, path);
  write_buffers(f.get(), model, s, path);
}

void write_optimizer(const std::string& path, const nn::Model& model, const CheckpointState& s) {
  H5Handle f = create_file(path);
  data::write_int_attr(f.get(), "format_version", kCheckpointFormatVersion);
  data::write_string_attr(f.get(), "name", s.optimizer);
  data::write_int_attr(f.get(), "steps", s.optimizer_steps);
  data::write_string_array_attr(f.get(), "buffers", s.optimizer_buffer_names);
  const auto params = nn::torch_parameters(model);
  for (size_t i = 0; i < s.optimizer_buffer_names.size(); ++i) {
    const std::string& name = s.optimizer_buffer_names[i];
    H5Handle g(ST_HDF5_CHECK(H5Gcreate2(f.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path,
                             ": creating group ", name),
               H5Gclose);
    write_named_tensors(g.get(), params, model, s.optimizer_buffers[i], path + ":" + name);
  }
}

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

void write_trainer(const std::string& path, const CheckpointState& s) {
  const CheckpointMeta& m = s.meta;
  H5Handle f = create_file(path);
  const hid_t id = f.get();
  data::write_int_attr(id, "format_version", kCheckpointFormatVersion);
  data::write_int_attr(id, "step", m.position.step);
  data::write_int_attr(id, "epoch", m.position.epoch);
  data::write_int_attr(id, "step_in_epoch", m.position.step_in_epoch);
  data::write_string_attr(id, "seed", std::to_string(m.seed));
  data::write_double_attr(id, "loss_scale", m.loss_scale);
  data::write_int_attr(id, "loss_scale_clean_steps", m.loss_scale_clean_steps);
  data::write_int_attr(id, "skipped_steps", m.skipped_steps);
  data::write_int_attr(id, "world_size", m.world_size);
  data::write_int_attr(id, "global_batch", m.global_batch);
  data::write_string_attr(id, "data_mode", m.data_mode);
  data::write_string_attr(id, "git_commit", m.git_commit);
  data::write_string_attr(id, "config", m.config_toml);
  data::write_string_attr(id, "config_hash", hex64(m.config_hash));
  std::vector<std::string> keys, values;
  for (const auto& [k, v] : m.identity) {
    keys.push_back(k);
    values.push_back(v);
  }
  data::write_string_array_attr(id, "identity_keys", keys);
  data::write_string_array_attr(id, "identity_values", values);
  data::write_string_attr(id, "parameter_checksum", hex64(m.parameter_checksum));
  if (!m.bf16_gemm.empty()) data::write_string_attr(id, "cpu_bf16_gemm", m.bf16_gemm);
  if (!m.algorithms.empty()) data::write_string_attr(id, "algorithms", m.algorithms);
}

CheckpointMeta read_meta_locked(const std::string& dir) {
  const std::string path = file_path(dir, kCheckpointTrainerFile);
  H5Handle f = open_file(path);
  const hid_t id = f.get();
  check_version(id, path);
  CheckpointMeta m;
  try {
    m.position.step = data::read_int_attr(id, "step");
    m.position.epoch = data::read_int_attr(id, "epoch");
    m.position.step_in_epoch = data::read_int_attr(id, "step_in_epoch");
    m.seed = std::stoull(data::read_string_attr(id, "seed"));
    m.loss_scale = data::read_double_attr(id, "loss_scale");
    m.loss_scale_clean_steps = data::read_int_attr(id, "loss_scale_clean_steps");
    m.skipped_steps = data::read_int_attr(id, "skipped_steps");
    m.world_size = static_cast<int>(data::read_int_attr(id, "world_size"));
    m.global_batch = data::read_int_attr(id, "global_batch");
    m.data_mode = data::read_string_attr(id, "data_mode");
    m.git_commit = data::read_string_attr(id, "git_commit");
    m.config_toml = data::read_string_attr(id, "config");
    m.config_hash = std::stoull(data::read_string_attr(id, "config_hash"), nullptr, 16);
    const auto keys = data::read_string_array_attr(id, "identity_keys");
    const auto values = data::read_string_array_attr(id, "identity_values");
    ST_CHECK(keys.size() == values.size(), "identity_keys and identity_values differ in length");
    for (size_t i = 0; i < keys.size(); ++i) m.identity.emplace_back(keys[i], values[i]);
    m.parameter_checksum = std::stoull(data::read_string_attr(id, "parameter_checksum"), nullptr, 16);
    if (data::has_attr(id, "cpu_bf16_gemm")) m.bf16_gemm = data::read_string_attr(id, "cpu_bf16_gemm");
    if (data::has_attr(id, "algorithms")) m.algorithms = data::read_string_attr(id, "algorithms");
  } catch (const Error& e) {
    ST_FAIL("checkpoint file ", path, ": ", e.what());
  }
  return m;
}

}  // namespace

void write_checkpoint_file(const std::string& dir, const char* file, const nn::Model& model,
                           const CheckpointState& state) {
  const std::string path = file_path(dir, file);
  {
    std::lock_guard lock(data::hdf5_mutex());
    const std::string name = file;
    if (name == kCheckpointModelFile) write_model(path, model, state);
    else if (name == kCheckpointOptimizerFile) write_optimizer(path, model, state);
    else if (name == kCheckpointTrainerFile) write_trainer(path, state);
    else ST_FAIL("unknown checkpoint file ", file);
  }
  fsync_path(path);
}

CheckpointMeta read_checkpoint_meta(const std::string& dir) {
  std::lock_guard lock(data::hdf5_mutex());
  return read_meta_locked(dir);
}

CheckpointState read_checkpoint(const std::string& dir, const nn::Model& model) {
  std::lock_guard lock(data::hdf5_mutex());
  CheckpointState s;
  s.meta = read_meta_locked(dir);
  const auto params = nn::torch_parameters(model);
  {
    const std::string path = file_path(dir, kCheckpointModelFile);
    H5Handle f = open_file(path);
    check_version(f.get(), path);
    const std::string saved = data::read_string_attr(f.get(), "model");
    ST_CHECK(saved == model.name(), "checkpoint file ", path, " holds model '", saved, "', this run builds '",
             model.name(), "'");
    s.parameters = read_named_tensors(f.get(), params, model, path);
    read_buffers(f.get(), model, s, path);
  }
  const std::string path = file_path(dir, kCheckpointOptimizerFile);
  H5Handle f = open_file(path);
  check_version(f.get(), path);
  s.optimizer = data::read_string_attr(f.get(), "name");
  s.optimizer_steps = data::read_int_attr(f.get(), "steps");
  s.optimizer_buffer_names = data::read_string_array_attr(f.get(), "buffers");
  for (const std::string& name : s.optimizer_buffer_names) {
    ST_CHECK(H5Lexists(f.get(), name.c_str(), H5P_DEFAULT) > 0, "checkpoint file ", path, " has no group '", name,
             "'");
    H5Handle g(ST_HDF5_CHECK(H5Gopen2(f.get(), name.c_str(), H5P_DEFAULT), path, ": opening group ", name), H5Gclose);
    s.optimizer_buffers.push_back(read_named_tensors(g.get(), params, model, path + ":" + name));
  }
  return s;
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);  // a directory opens read-only too
  ST_CHECK(fd >= 0, "checkpoint path ", path, ": cannot open it to fsync");
  const int rc = ::fsync(fd);
  ::close(fd);
  ST_CHECK(rc == 0, "checkpoint path ", path, ": fsync failed");
}

// FNV-1a steps over 64-bit words in four independent lanes, then the lanes and the tail bytes into
// one hash. Each step is a bijection of the running hash, so any one changed word changes the
// result. Words in four lanes, not bytes in one chain: a chain of dependent multiplies per byte
// would make the checksum a visible share of each checkpoint's write.
uint64_t parameter_checksum(const float* values, int64_t n) {
  constexpr uint64_t kBasis = 1469598103934665603ull;
  constexpr uint64_t kPrime = 1099511628211ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values);
  const size_t size = static_cast<size_t>(n) * sizeof(float);
  uint64_t lanes[4] = {kBasis, kBasis + 1, kBasis + 2, kBasis + 3};
  size_t i = 0;
  for (; i + sizeof lanes <= size; i += sizeof lanes)
    for (size_t l = 0; l < 4; ++l) {
      uint64_t word;
      std::memcpy(&word, bytes + i + l * sizeof word, sizeof word);
      lanes[l] = (lanes[l] ^ word) * kPrime;
    }
  uint64_t h = kBasis;
  for (uint64_t lane : lanes) h = (h ^ lane) * kPrime;
  for (; i < size; ++i) h = (h ^ bytes[i]) * kPrime;
  return h;
}

}  // namespace scaletrain::train
